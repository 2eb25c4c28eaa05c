import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { FormError } from "../components/field.tsx";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { Link } from "../navigation.tsx";
import { messageOf, useTRPC } from "../trpc.ts";
import {
  type Change,
  CHANGE_STATE_LABELS,
  countsText,
  isUnderWay,
  LIVE_MS,
  ROUTER_STATE_LABELS,
  StateBadge,
} from "./changes-page.tsx";
import { routerLabel } from "./fleet-page.tsx";
import { stepLabel } from "../change-step.ts";

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : "—");
const seconds = (from: string | null, to: string | null) =>
  from && to ? `${Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 1000))} s` : "—";

/**
 * docs/console.md "Changes": one change, its actions, the script as a chosen router would run it,
 * and its routers' results, read again every two seconds while it is under way.
 */
export const ChangePage = ({ changeId }: { changeId: string }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const change = useQuery({
    ...trpc.changes.get.queryOptions({ id: changeId }),
    refetchInterval: (query) => (isUnderWay(query.state.data?.data.state) ? LIVE_MS : false),
  });
  const data = change.data?.data;
  usePageTitle(data ? `Change ${data.name}` : "Change");
  // Routers still running report after their change stopped (cancelled, halted): read until they do.
  const results = useQuery({
    ...trpc.changes.routers.queryOptions({ id: changeId }),
    refetchInterval: (query) =>
      isUnderWay(data?.state) || query.state.data?.data.some((r) => r.state === "running") ? LIVE_MS : false,
  });
  // The change's last move (completed, halted) is read with its routers' last results.
  const state = data?.state;
  useEffect(() => {
    if (state) void queryClient.invalidateQueries({ queryKey: trpc.changes.routers.queryKey({ id: changeId }) });
  }, [state, changeId, queryClient, trpc]);
  const routers = useQuery(trpc.routers.list.queryOptions());
  const nameOf = new Map((routers.data?.data ?? []).map((r) => [r.id, routerLabel(r)]));
  const label = (id: string) => nameOf.get(id) ?? `Router ${id.slice(0, 8)}`;
  const rows = results.data?.data ?? [];

  return (
    <section aria-labelledby="change-title">
      <p className="crumbs">
        <Link to="/changes">Changes</Link> /
      </p>
      <QueryState isPending={change.isPending} error={change.error} what="the change" />
      {data ? (
        <>
          <div className="page-head start">
            <h1 id="change-title">{data.name}</h1>
            <span role="status" aria-label="Change state">
              <StateBadge state={data.state} />
            </span>
          </div>
          <ul className="counts" aria-label="Routers per state">
            {Object.entries(ROUTER_STATE_LABELS)
              .filter(([s]) => (data.counts[s] ?? 0) > 0)
              .map(([s, text]) => (
                <li key={s}>
                  <strong>{data.counts[s]}</strong> {text.toLowerCase()}
                </li>
              ))}
          </ul>
          <Actions change={data} />
          <Facts change={data} />
          {rows.length > 0 ? (
            <Preview changeId={changeId} routerIds={rows.map((r) => r.router_id)} label={label} />
          ) : null}
          <section aria-labelledby="results-title">
            <h2 id="results-title">Router results</h2>
            <QueryState isPending={results.isPending} error={results.error} what="the results" />
            {rows.length > 0 ? (
              <table aria-label="Router results">
                <thead>
                  <tr>
                    <th scope="col">Router</th>
                    <th scope="col">Wave</th>
                    <th scope="col">State</th>
                    <th scope="col">Step</th>
                    <th scope="col">Started</th>
                    <th scope="col">Finished</th>
                    <th scope="col">Took</th>
                    <th scope="col">Output</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r) => (
                    <tr key={r.id}>
                      <th scope="row">
                        <Link to={`/routers/${r.router_id}`}>{label(r.router_id)}</Link>
                      </th>
                      <td>{r.wave === 0 ? "Canary" : r.wave}</td>
                      <td>{ROUTER_STATE_LABELS[r.state]}</td>
                      <td>{stepLabel(r.phase, r.state)}</td>
                      <td>{when(r.started_at)}</td>
                      <td>{when(r.finished_at)}</td>
                      <td>{seconds(r.started_at, r.finished_at)}</td>
                      <td>
                        {r.output ? (
                          <details>
                            <summary>Output</summary>
                            <pre className="config">{r.output}</pre>
                          </details>
                        ) : (
                          "—"
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : null}
          </section>
        </>
      ) : null}
    </section>
  );
};

/** Approve (never offered to its author), pause, resume, cancel: what the change's state allows. */
const Actions = ({ change }: { change: Change }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.me.get.queryOptions());
  const onSuccess = () => queryClient.invalidateQueries({ queryKey: trpc.changes.pathKey() });
  const approve = useMutation(trpc.changes.approve.mutationOptions({ onSuccess }));
  const pause = useMutation(trpc.changes.pause.mutationOptions({ onSuccess }));
  const resume = useMutation(trpc.changes.resume.mutationOptions({ onSuccess }));
  const cancel = useMutation(trpc.changes.cancel.mutationOptions({ onSuccess }));
  const input = { id: change.id };
  const author = me.data !== undefined && me.data.user_id === change.created_by;
  const busy = approve.isPending || pause.isPending || resume.isPending || cancel.isPending;
  const failed = approve.error ?? pause.error ?? resume.error ?? cancel.error;
  const s = change.state;
  return (
    <div>
      {s === "awaiting_approval" && author ? (
        <p>You made this change: another person with the right to manage the organization approves it.</p>
      ) : null}
      <div className="actions">
        {s === "awaiting_approval" && me.data && !author ? (
          <button type="button" disabled={busy} onClick={() => approve.mutate(input)}>
            Approve
          </button>
        ) : null}
        {s === "running" || s === "scheduled" ? (
          <button type="button" className="secondary" disabled={busy} onClick={() => pause.mutate(input)}>
            Pause
          </button>
        ) : null}
        {s === "paused" ? (
          <button type="button" disabled={busy} onClick={() => resume.mutate(input)}>
            Resume
          </button>
        ) : null}
        {s !== "completed" && s !== "cancelled" ? (
          <button type="button" className="danger" disabled={busy} onClick={() => cancel.mutate(input)}>
            Cancel change
          </button>
        ) : null}
      </div>
      <FormError message={failed ? messageOf(failed) : undefined} />
    </div>
  );
};

const Facts = ({ change }: { change: Change }) => (
  <section aria-labelledby="change-facts-title">
    <h2 id="change-facts-title">Details</h2>
    <dl className="facts">
      <dt>Kind</dt>
      <dd>
        {change.kind === "script"
          ? "RouterOS script"
          : `Firmware, ${change.firmware?.channel ?? "?"} channel${change.firmware?.version ? `, version ${change.firmware.version}` : ""}`}
      </dd>
      <dt>State</dt>
      <dd>{CHANGE_STATE_LABELS[change.state]}</dd>
      <dt>Routers</dt>
      <dd>{countsText(change.counts)}</dd>
      <dt>Rollout</dt>
      <dd>
        {change.strategy.canary} canary, then waves of {change.strategy.wave_size} every{" "}
        {change.strategy.wave_interval_seconds} s; halts past {change.strategy.max_failures} failures; guard{" "}
        {change.guard_seconds} s
      </dd>
      <dt>Created</dt>
      <dd>{when(change.created_at)}</dd>
      <dt>Starts</dt>
      <dd>{change.start_at ? when(change.start_at) : change.requires_approval ? "Once approved" : "At once"}</dd>
      <dt>Started</dt>
      <dd>{when(change.started_at)}</dd>
      <dt>Finished</dt>
      <dd>{when(change.finished_at)}</dd>
    </dl>
    {change.script !== null ? (
      <div className="field">
        <label htmlFor="change-script">Script as written</label>
        <textarea id="change-script" readOnly rows={6} value={change.script} spellCheck={false} />
      </div>
    ) : null}
  </section>
);

/** The script as one of the change's routers would run it (`changes.preview`), the first one to begin with. */
const Preview = ({
  changeId,
  routerIds,
  label,
}: {
  changeId: string;
  routerIds: string[];
  label: (id: string) => string;
}) => {
  const trpc = useTRPC();
  const [chosen, setChosen] = useState("");
  const routerId = chosen || routerIds[0] || "";
  const preview = useQuery({
    ...trpc.changes.preview.queryOptions({ id: changeId, router_id: routerId }),
    enabled: routerId !== "",
  });
  const script = preview.data?.data.script;
  return (
    <section aria-labelledby="preview-title">
      <h2 id="preview-title">Preview</h2>
      <div className="field inline">
        <label htmlFor="preview-router">Preview for router</label>
        <select id="preview-router" value={routerId} onChange={(e) => setChosen(e.target.value)}>
          {routerIds.map((id) => (
            <option key={id} value={id}>
              {label(id)}
            </option>
          ))}
        </select>
      </div>
      <QueryState isPending={preview.isPending} error={preview.error} what="the preview" />
      {preview.data ? (
        script === null || script === undefined ? (
          <p>A firmware upgrade runs no script.</p>
        ) : (
          <div className="field">
            <label htmlFor="preview-script">Rendered script</label>
            <textarea id="preview-script" readOnly rows={8} value={script} spellCheck={false} />
          </div>
        )
      ) : null}
    </section>
  );
};
