import { useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Outputs, type Router, useTRPC } from "../trpc.ts";
import { routerLabel } from "./fleet-page.tsx";

const PAGE_SIZES = [25, 50, 100, 200] as const;

/** docs/console.md "Audit log": newest first, filtered by action and router, paged by cursor. */
export const AuditLogPage = () => {
  usePageTitle("Audit log");
  const trpc = useTRPC();
  const routers = useQuery(trpc.routers.list.queryOptions());
  const me = useQuery(trpc.me.get.queryOptions());
  const [draft, setDraft] = useState({ action: "", router: "" });
  const [filters, setFilters] = useState({ action: "", router: "" });
  const [limit, setLimit] = useState<number>(50);
  // The cursors of the pages before this one, so "Newer" goes back exactly.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useQuery(
    trpc.auditLog.list.queryOptions({
      limit,
      ...(cursor ? { cursor } : {}),
      ...(filters.action ? { action: filters.action } : {}),
      ...(filters.router ? { router_id: filters.router } : {}),
    }),
  );
  const apply = (event: FormEvent) => {
    event.preventDefault();
    setFilters({ action: draft.action.trim(), router: draft.router });
    setCursors([]);
  };
  const nameOf = new Map((routers.data?.data ?? []).map((r) => [r.id, routerLabel(r)]));
  const entries = page.data?.data ?? [];
  const next = page.data?.next_cursor;
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <AuditFilters
        draft={draft}
        onDraft={setDraft}
        onApply={apply}
        routers={routers.data?.data ?? []}
        limit={limit}
        onLimit={(n) => {
          setLimit(n);
          setCursors([]);
        }}
      />
      <QueryState isPending={page.isPending} error={page.error} what="the audit log" />
      {page.data && entries.length === 0 ? <p>No entries match.</p> : null}
      {entries.length > 0 ? <AuditTable entries={entries} nameOf={nameOf} me={me.data} /> : null}
      <nav aria-label="Audit log pages" className="actions">
        <button
          type="button"
          className="secondary"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer entries
        </button>
        <button
          type="button"
          className="secondary"
          disabled={!next}
          onClick={() => next && setCursors([...cursors, next])}
        >
          Older entries
        </button>
      </nav>
    </section>
  );
};

interface Draft {
  action: string;
  router: string;
}

const AuditFilters = ({
  draft,
  onDraft,
  onApply,
  routers,
  limit,
  onLimit,
}: {
  draft: Draft;
  onDraft: (draft: Draft) => void;
  onApply: (event: FormEvent) => void;
  routers: Router[];
  limit: number;
  onLimit: (limit: number) => void;
}) => (
  <form onSubmit={onApply} className="toolbar" aria-label="Filters">
    <div className="field inline">
      <label htmlFor="audit-action">Action</label>
      <input
        id="audit-action"
        list="audit-actions"
        placeholder="router.offline"
        value={draft.action}
        onChange={(e) => onDraft({ ...draft, action: e.target.value })}
      />
      <datalist id="audit-actions">
        {[
          "router.enrolled",
          "router.online",
          "router.offline",
          "forward.created",
          "forward.revoked",
          "api_key.created",
        ].map((a) => (
          <option key={a} value={a} />
        ))}
      </datalist>
    </div>
    <div className="field inline">
      <label htmlFor="audit-router">Router</label>
      <select id="audit-router" value={draft.router} onChange={(e) => onDraft({ ...draft, router: e.target.value })}>
        <option value="">All routers</option>
        {routers.map((r) => (
          <option key={r.id} value={r.id}>
            {routerLabel(r)}
          </option>
        ))}
      </select>
    </div>
    <div className="field inline">
      <label htmlFor="audit-size">Per page</label>
      <select id="audit-size" value={limit} onChange={(e) => onLimit(Number(e.target.value))}>
        {PAGE_SIZES.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </div>
    <button type="submit">Apply filters</button>
  </form>
);

type Entry = Outputs["auditLog"]["list"]["data"][number];
const ACTOR_KINDS: Record<string, string> = { user: "user", api_key: "API key", router: "router", system: "system" };

/** "you@example.com (you)" for the signed-in user, else the kind and the id's first 8 characters. */
const actorLabel = (actor: Entry["actor"], me: Outputs["me"]["get"] | undefined) => {
  if (actor.type === "user" && me && actor.id === me.user_id) return me.email ? `${me.email} (you)` : "you";
  const kind = ACTOR_KINDS[actor.type] ?? actor.type;
  return actor.type === "system" || !actor.id ? kind : `${kind} ${actor.id.slice(0, 8)}`;
};

const AuditTable = ({
  entries,
  nameOf,
  me,
}: {
  entries: Entry[];
  nameOf: Map<string, string>;
  me: Outputs["me"]["get"] | undefined;
}) => (
  <table aria-label="Audit entries">
    <thead>
      <tr>
        <th scope="col">When</th>
        <th scope="col">Action</th>
        <th scope="col">Actor</th>
        <th scope="col">Router</th>
        <th scope="col">Details</th>
      </tr>
    </thead>
    <tbody>
      {entries.map((entry) => (
        <tr key={entry.id}>
          <td>
            <time dateTime={entry.occurred_at}>{new Date(entry.occurred_at).toLocaleString()}</time>
          </td>
          <td>
            <code>{entry.action}</code>
          </td>
          <td>
            {actorLabel(entry.actor, me)}
            {entry.source_ip ? ` from ${entry.source_ip}` : ""}
          </td>
          <td>{entry.router_id ? (nameOf.get(entry.router_id) ?? entry.router_id.slice(0, 8)) : "—"}</td>
          <td className="details">{Object.keys(entry.details).length ? JSON.stringify(entry.details) : ""}</td>
        </tr>
      ))}
    </tbody>
  </table>
);
