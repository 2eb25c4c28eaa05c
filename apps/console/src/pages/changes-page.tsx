import { keepPreviousData, useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useDeferredValue, useState } from "react";
import { Field, FormError, SelectField, TextAreaField } from "../components/field.tsx";
import { numberOrText, useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { BASE, Link, navigate } from "../navigation.tsx";
import { fieldErrors, type Inputs, type Outputs, useTRPC } from "../trpc.ts";
import { routerLabel } from "./fleet-page.tsx";

export type Change = Outputs["changes"]["get"]["data"];
type ChangeState = Change["state"];
type RouterState = Outputs["changes"]["routers"]["data"][number]["state"];
type Kind = Inputs["changes"]["create"]["kind"];

/** Changes a page of the list holds (docs/console.md "Changes"). */
export const CHANGES_PAGE_SIZE = 50;
/** How often a change that is under way is read again. */
export const LIVE_MS = 2_000;

export const CHANGE_STATE_LABELS: Record<ChangeState, string> = {
  awaiting_approval: "Awaiting approval",
  scheduled: "Scheduled",
  running: "Running",
  paused: "Paused",
  halted: "Halted",
  completed: "Completed",
  cancelled: "Cancelled",
};

export const ROUTER_STATE_LABELS: Record<RouterState, string> = {
  pending: "Pending",
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
  reverted: "Reverted",
  skipped_offline: "Skipped (offline)",
  cancelled: "Cancelled",
};

/** States in which routers may still start or report: the views poll while a change is in one. */
export const isUnderWay = (state: ChangeState | undefined) =>
  state === "scheduled" || state === "running" || state === "paused";

/** "1 succeeded · 2 pending": the routers per state, in the order of `ROUTER_STATE_LABELS`. */
export const countsText = (counts: Record<string, number>) =>
  (Object.keys(ROUTER_STATE_LABELS) as RouterState[])
    .filter((state) => (counts[state] ?? 0) > 0)
    .map((state) => `${counts[state]} ${ROUTER_STATE_LABELS[state].toLowerCase()}`)
    .join(" · ") || "no routers";

const KINDS: ReadonlyArray<{ value: Kind; label: string }> = [
  { value: "script", label: "RouterOS script" },
  { value: "firmware", label: "Firmware upgrade" },
];
const CHANNELS = [
  { value: "stable", label: "Stable" },
  { value: "long-term", label: "Long-term" },
] as const;

/** docs/console.md "Changes": compose a change, and the organization's changes newest first. */
export const ChangesPage = () => {
  usePageTitle("Changes");
  const trpc = useTRPC();
  const list = useInfiniteQuery(
    trpc.changes.list.infiniteQueryOptions(
      { limit: CHANGES_PAGE_SIZE },
      {
        getNextPageParam: (page) => page.next_cursor ?? undefined,
        placeholderData: keepPreviousData,
        refetchInterval: (query) =>
          query.state.data?.pages.some((page) => page.data.some((c) => isUnderWay(c.state))) ? LIVE_MS : false,
      },
    ),
  );
  const shown = list.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="changes-title">
      <h1 id="changes-title">Changes</h1>
      <Compose />
      <section aria-labelledby="changes-list-title">
        <h2 id="changes-list-title">Recent changes</h2>
        <QueryState isPending={list.isPending} error={list.error} what="changes" />
        {list.data && shown.length === 0 ? <p>No changes yet.</p> : null}
        {shown.length > 0 ? (
          <table aria-label="Changes">
            <thead>
              <tr>
                <th scope="col">Change</th>
                <th scope="col">Kind</th>
                <th scope="col">State</th>
                <th scope="col">Routers</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((change) => (
                <tr key={change.id}>
                  <th scope="row">
                    <Link to={`/changes/${change.id}`}>{change.name}</Link>
                  </th>
                  <td>{change.kind === "script" ? "Script" : "Firmware"}</td>
                  <td>
                    <StateBadge state={change.state} />
                  </td>
                  <td>{countsText(change.counts)}</td>
                  <td>{new Date(change.created_at).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {list.hasNextPage ? (
          <button type="button" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>
            {list.isFetchingNextPage ? "Loading…" : `Show ${CHANGES_PAGE_SIZE} more`}
          </button>
        ) : null}
      </section>
    </section>
  );
};

export const StateBadge = ({ state }: { state: ChangeState }) => (
  <span
    className={
      state === "completed" ? "badge online" : state === "halted" || state === "cancelled" ? "badge offline" : "badge"
    }
  >
    {CHANGE_STATE_LABELS[state]}
  </span>
);

/** The server's errors at `prefix` and at its items (`routers.tags` and `routers.tags.3`). */
const errorsUnder = (errors: Record<string, string[]>, prefix: string): string[] | undefined => {
  const found = Object.entries(errors)
    .filter(([key]) => key === prefix || key.startsWith(`${prefix}.`))
    .flatMap(([, messages]) => messages);
  return found.length > 0 ? found : undefined;
};

const splitList = (text: string) =>
  text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);

const Compose = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.me.get.queryOptions());
  const organizationId = me.data?.organization_id;
  const teams = useQuery({
    ...trpc.teams.list.queryOptions({ id: organizationId ?? "" }),
    enabled: organizationId !== undefined,
  });
  const create = useMutation(
    trpc.changes.create.mutationOptions({
      onSuccess: async (answer) => {
        await queryClient.invalidateQueries({ queryKey: trpc.changes.list.pathKey() });
        navigate(`${BASE}/changes/${answer.data.id}`);
      },
    }),
  );
  const { values, judged } = useFormValues(
    {
      name: "",
      kind: "script",
      script: "",
      channel: "stable",
      version: "",
      tags: "",
      team_id: "",
      canary: "1",
      wave_size: "10",
      wave_interval_seconds: "60",
      max_failures: "0",
      guard_seconds: "300",
      start_at: "",
    },
    (name) =>
      name === "channel" || name === "version"
        ? `firmware.${name}`
        : name === "tags" || name === "team_id"
          ? `routers.${name}`
          : name === "canary" || name === "wave_size" || name === "wave_interval_seconds" || name === "max_failures"
            ? `strategy.${name}`
            : name,
  );
  const [chosen, setChosen] = useState<Array<{ id: string; label: string }>>([]);
  const [everyRouter, setEveryRouter] = useState(false);
  const [approval, setApproval] = useState(false);
  /** The one check made here: an empty selector means every router, so that takes a tick. */
  const [noTarget, setNoTarget] = useState(false);
  const kind = values.kind as Kind;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const tags = splitList(values.tags);
    const routers = {
      ...(chosen.length > 0 ? { router_ids: chosen.map((r) => r.id) } : {}),
      ...(tags.length > 0 ? { tags } : {}),
      ...(values.team_id ? { team_id: values.team_id } : {}),
    };
    const targeted = Object.keys(routers).length > 0;
    setNoTarget(!targeted && !everyRouter);
    if (!targeted && !everyRouter) return;
    create.mutate({
      name: values.name,
      kind,
      ...(kind === "script"
        ? { script: values.script }
        : {
            firmware: {
              channel: values.channel as "stable" | "long-term",
              ...(values.version.trim() ? { version: values.version.trim() } : {}),
            },
          }),
      routers,
      strategy: {
        canary: numberOrText(values.canary),
        wave_size: numberOrText(values.wave_size),
        wave_interval_seconds: numberOrText(values.wave_interval_seconds),
        max_failures: numberOrText(values.max_failures),
      },
      guard_seconds: numberOrText(values.guard_seconds),
      requires_approval: approval,
      ...(values.start_at.trim() ? { start_at: values.start_at.trim() } : {}),
    });
  };
  const errors = fieldErrors(create.error);
  const routerIdErrors = errorsUnder(errors, "routers.router_ids");
  const { field, unplaced } = judged(
    create.error,
    Object.keys(errors).filter((key) => key.startsWith("routers") || key === "requires_approval"),
  );
  const teamOptions = [
    { value: "", label: "Any team" },
    ...(teams.data?.data ?? []).map((t) => ({ value: t.id, label: t.name })),
  ];
  return (
    <form onSubmit={submit} className="card" aria-label="Compose a change" noValidate>
      <h2>Compose a change</h2>
      <div className="row">
        <Field label="Change name" maxLength={100} {...field("name")} />
        <SelectField label="Kind" {...field("kind")} options={KINDS} />
      </div>
      {kind === "script" ? (
        <TextAreaField
          label="Script (placeholders: {{identity}}, {{name}}, {{tunnel_ip}}, {{metadata.<key>}})"
          rows={8}
          spellCheck={false}
          {...field("script")}
        />
      ) : (
        <div className="row">
          <SelectField label="Firmware channel" {...field("channel")} options={CHANNELS} />
          <Field label="Version (optional)" {...field("version")} />
        </div>
      )}
      <fieldset>
        <legend>Routers (every condition given must hold)</legend>
        <RouterPicker
          chosen={chosen}
          onChoose={(router) => setChosen((current) => [...current.filter((r) => r.id !== router.id), router])}
          onRemove={(id) => setChosen((current) => current.filter((r) => r.id !== id))}
          errors={routerIdErrors}
        />
        <div className="row">
          <Field
            label="Router tags (comma-separated, any of them)"
            {...field("tags")}
            errors={errorsUnder(errors, "routers.tags")}
          />
          <SelectField label="Team" {...field("team_id")} options={teamOptions} />
        </div>
        <label className="check">
          <input type="checkbox" checked={everyRouter} onChange={(e) => setEveryRouter(e.target.checked)} />
          Every router (when no router, tag or team is given)
        </label>
        {errors.routers ? <p className="error">{errors.routers.join(" ")}</p> : null}
        {noTarget ? (
          <p role="alert" className="error">
            Choose routers, tags or a team, or tick “Every router”.
          </p>
        ) : null}
      </fieldset>
      <fieldset>
        <legend>Rollout</legend>
        <div className="row">
          <Field label="Canary routers" inputMode="numeric" {...field("canary")} />
          <Field label="Wave size" inputMode="numeric" {...field("wave_size")} />
          <Field label="Seconds between waves" inputMode="numeric" {...field("wave_interval_seconds")} />
          <Field label="Failures tolerated" inputMode="numeric" {...field("max_failures")} />
          <Field label="Guard seconds" inputMode="numeric" {...field("guard_seconds")} />
          <Field label="Start at (ISO 8601, optional)" placeholder="2026-12-01T22:00:00Z" {...field("start_at")} />
        </div>
        <label className="check">
          <input type="checkbox" checked={approval} onChange={(e) => setApproval(e.target.checked)} />
          Requires approval by another person
        </label>
      </fieldset>
      <FormError message={unplaced} />
      <button type="submit" disabled={create.isPending}>
        Create change
      </button>
    </form>
  );
};

/** Routers found by the server's search (`routers.list` with `q`), added to the change one by one. */
const RouterPicker = ({
  chosen,
  onChoose,
  onRemove,
  errors,
}: {
  chosen: ReadonlyArray<{ id: string; label: string }>;
  onChoose: (router: { id: string; label: string }) => void;
  onRemove: (id: string) => void;
  errors: string[] | undefined;
}) => {
  const trpc = useTRPC();
  const [search, setSearch] = useState("");
  const q = useDeferredValue(search.trim());
  const found = useQuery({
    ...trpc.routers.list.queryOptions({ limit: 10, q }),
    enabled: q !== "",
    placeholderData: keepPreviousData,
  });
  const matches = q === "" ? [] : (found.data?.data ?? []).filter((r) => !chosen.some((c) => c.id === r.id));
  const invalid = errors !== undefined;
  return (
    <div className={invalid ? "field invalid" : "field"}>
      <label htmlFor="change-router-search">Find routers</label>
      <input
        id="change-router-search"
        type="search"
        maxLength={100}
        value={search}
        onChange={(e) => setSearch(e.target.value)}
        aria-invalid={invalid || undefined}
        aria-describedby={invalid ? "change-router-errors" : undefined}
      />
      {invalid ? (
        <span id="change-router-errors" className="error">
          {errors.join(" ")}
        </span>
      ) : null}
      {matches.length > 0 ? (
        <ul aria-label="Matching routers" className="plain">
          {matches.map((router) => (
            <li key={router.id}>
              {routerLabel(router)}{" "}
              <button
                type="button"
                className="secondary"
                aria-label={`Add ${routerLabel(router)}`}
                onClick={() => onChoose({ id: router.id, label: routerLabel(router) })}
              >
                Add
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      {q !== "" ? <QueryState isPending={false} error={found.error} what="routers" /> : null}
      {q !== "" && found.data && matches.length === 0 ? <p>No other router matches.</p> : null}
      {chosen.length > 0 ? (
        <ul aria-label="Chosen routers" className="plain">
          {chosen.map((router) => (
            <li key={router.id}>
              {router.label}{" "}
              <button
                type="button"
                className="secondary"
                aria-label={`Remove ${router.label}`}
                onClick={() => onRemove(router.id)}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
};
