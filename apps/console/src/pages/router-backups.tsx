import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { FormError } from "../components/field.tsx";
import { QueryState } from "../components/query-state.tsx";
import { messageOf, type Outputs, useTRPC } from "../trpc.ts";

type Backup = Outputs["backups"]["list"]["data"][number];
type Shown = { id: string; view: "text" | "diff" };

/** How long the list is polled after "Take a backup now" while no newer reading has arrived. */
const WAIT_MS = 60_000;
const POLL_MS = 2_000;

const when = (iso: string) => new Date(iso).toLocaleString();

/**
 * docs/console.md "Router": the router's configuration versions, newest first; one taken on demand
 * (the agent reads the router within seconds; the list is polled until a reading newer than the
 * request arrives, or a failure does), a version's text, and what changed against the version
 * before it.
 */
export const BackupsSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const [waitingSince, setWaitingSince] = useState<number | undefined>();
  const [shown, setShown] = useState<Shown | undefined>();
  const backups = useQuery({
    ...trpc.backups.list.queryOptions({ router_id: routerId }),
    refetchInterval: (query) => {
      if (waitingSince === undefined || Date.now() - waitingSince > WAIT_MS) return false;
      const page = query.state.data;
      const newest = page?.data[0];
      const read = newest ? Math.max(Date.parse(newest.created_at), Date.parse(newest.checked_at)) : 0;
      const failed = page?.last_failure ? Date.parse(page.last_failure.failed_at) : 0;
      // Times are shown to the second: a reading in the request's own second counts.
      return Math.max(read, failed) >= Math.floor(waitingSince / 1000) * 1000 ? false : POLL_MS;
    },
  });
  const take = useMutation(
    trpc.backups.take.mutationOptions({
      onMutate: () => setWaitingSince(Date.now()),
      onSuccess: () => backups.refetch(),
      onError: () => setWaitingSince(undefined),
    }),
  );
  const list = backups.data?.data ?? [];
  const failure = backups.data?.last_failure;
  const polling = waitingSince !== undefined && backups.isRefetching;

  return (
    <>
      <div className="actions">
        <button type="button" onClick={() => take.mutate({ router_id: routerId })} disabled={take.isPending}>
          Take a backup now
        </button>
        <span role="status" className="hint">
          {take.isSuccess ? "Backup requested; the router's configuration is read within seconds." : ""}
          {polling ? " Checking…" : ""}
        </span>
      </div>
      {take.error ? <FormError message={`Could not take a backup: ${messageOf(take.error)}`} /> : null}
      {failure ? (
        <p className="form-error">
          The last backup failed at {when(failure.failed_at)}: {failure.reason}
        </p>
      ) : null}
      <QueryState isPending={backups.isPending} error={backups.error} what="backups" />
      {backups.data && list.length === 0 ? <p>No configuration versions yet.</p> : null}
      {list.length > 0 ? (
        <table aria-label="Configuration versions">
          <thead>
            <tr>
              <th scope="col">First read</th>
              <th scope="col">Last checked</th>
              <th scope="col">Lines</th>
              <th scope="col">Size</th>
              <th scope="col">SHA-256</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((backup, i) => (
              <BackupRow
                key={backup.id}
                backup={backup}
                first={i === list.length - 1 && backups.data?.next_cursor === null}
                shown={shown?.id === backup.id ? shown.view : undefined}
                onShow={(view) =>
                  setShown(shown?.id === backup.id && shown.view === view ? undefined : { id: backup.id, view })
                }
              />
            ))}
          </tbody>
        </table>
      ) : null}
      {shown && list.some((b) => b.id === shown.id) ? (
        <BackupViewer
          routerId={routerId}
          shown={shown}
          backup={list.find((b) => b.id === shown.id) as Backup}
          first={list.at(-1)?.id === shown.id && backups.data?.next_cursor === null}
        />
      ) : null}
    </>
  );
};

const BackupRow = ({
  backup,
  first,
  shown,
  onShow,
}: {
  backup: Backup;
  first: boolean;
  shown: Shown["view"] | undefined;
  onShow: (view: Shown["view"]) => void;
}) => {
  const of = when(backup.created_at);
  return (
    <tr>
      <td>
        <time dateTime={backup.created_at}>{of}</time>
      </td>
      <td>
        <time dateTime={backup.checked_at}>{when(backup.checked_at)}</time>
      </td>
      <td>{backup.lines}</td>
      <td>{backup.bytes} bytes</td>
      <td>
        <code title={backup.sha256}>{backup.sha256.slice(0, 12)}</code>
      </td>
      <td className="actions">
        <button
          type="button"
          className="secondary"
          aria-pressed={shown === "text"}
          aria-label={`View configuration of ${of}`}
          onClick={() => onShow("text")}
        >
          View
        </button>
        <button
          type="button"
          className="secondary"
          aria-pressed={shown === "diff"}
          aria-label={`Changes in configuration of ${of}`}
          onClick={() => onShow("diff")}
        >
          {first ? "Changes (first version)" : "Changes"}
        </button>
      </td>
    </tr>
  );
};

/** A version's text, or the unified diff against the version before it, lines marked by kind. */
const BackupViewer = ({
  routerId,
  shown,
  backup,
  first,
}: {
  routerId: string;
  shown: Shown;
  backup: Backup;
  first: boolean;
}) => {
  const trpc = useTRPC();
  const input = { router_id: routerId, id: shown.id };
  const text = useQuery({ ...trpc.backups.get.queryOptions(input), enabled: shown.view === "text" });
  const diff = useQuery({ ...trpc.backups.diff.queryOptions(input), enabled: shown.view === "diff" });
  const query = shown.view === "text" ? text : diff;
  const of = when(backup.created_at);
  const title =
    shown.view === "text"
      ? `Configuration of ${of}`
      : `Changes in configuration of ${of} ${first ? "(the first version: against nothing)" : "against the version before"}`;
  return (
    <section aria-labelledby="backup-viewer-title" className="viewer">
      <h3 id="backup-viewer-title">{title}</h3>
      <QueryState
        isPending={query.isPending}
        error={query.error}
        what={shown.view === "text" ? "the configuration" : "the changes"}
      />
      {query.data !== undefined ? (
        <pre className="config">{shown.view === "text" ? query.data : <DiffLines diff={query.data} />}</pre>
      ) : null}
    </section>
  );
};

const DiffLines = ({ diff }: { diff: string }) => {
  const lines = diff.split("\n");
  if (!diff.includes("\n@@")) return <>No changes.</>;
  return (
    <>
      {lines.map((line, i) => {
        const kind =
          line.startsWith("+++") || line.startsWith("---") || line.startsWith("===") || line.startsWith("Index:")
            ? "meta"
            : line.startsWith("@@")
              ? "hunk"
              : line.startsWith("+")
                ? "added"
                : line.startsWith("-")
                  ? "removed"
                  : "same";
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: lines of one fixed text, never reordered
          <span key={i} className={`diff-${kind}`}>
            {kind === "added" ? <span className="visually-hidden">added: </span> : null}
            {kind === "removed" ? <span className="visually-hidden">removed: </span> : null}
            {line}
            {"\n"}
          </span>
        );
      })}
    </>
  );
};
