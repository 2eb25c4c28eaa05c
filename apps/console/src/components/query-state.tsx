import { messageOf } from "../trpc.ts";

/** Loading and error lines of a query, so every page says the same thing the same way. */
export const QueryState = ({ isPending, error, what }: { isPending: boolean; error: unknown; what: string }) => {
  if (error)
    return (
      <p className="form-error">
        Could not load {what}: {messageOf(error)}
      </p>
    );
  if (isPending) return <p aria-busy="true">Loading {what}…</p>;
  return null;
};
