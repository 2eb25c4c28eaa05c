import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Field, FormError, SelectField } from "../components/field.tsx";
import { numberOrText, useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Inputs, messageOf, type Outputs, useTRPC } from "../trpc.ts";

type ChannelType = Inputs["notificationChannels"]["create"]["type"];
type Channel = Outputs["notificationChannels"]["list"]["data"][number];

const TYPES: ReadonlyArray<{ value: ChannelType; label: string }> = [
  { value: "email", label: "Email" },
  { value: "slack", label: "Slack" },
  { value: "teams", label: "Microsoft Teams" },
  { value: "telegram", label: "Telegram" },
  { value: "pagerduty", label: "PagerDuty" },
];

/** The config fields of each type; the server names them `config.<field>`. */
const CONFIG_FIELDS: Record<ChannelType, ReadonlyArray<{ name: ConfigField; label: string }>> = {
  email: [{ name: "to", label: "Recipients (comma-separated)" }],
  slack: [{ name: "webhook_url", label: "Incoming webhook URL" }],
  teams: [{ name: "webhook_url", label: "Incoming webhook URL" }],
  telegram: [
    { name: "bot_token", label: "Bot token" },
    { name: "chat_id", label: "Chat id" },
  ],
  pagerduty: [{ name: "routing_key", label: "Integration (routing) key" }],
};
type ConfigField = "to" | "webhook_url" | "bot_token" | "chat_id" | "routing_key";

/** docs/console.md "Notifications": channels with a test send and their log, alert rules, maintenance windows. */
export const NotificationsPage = () => {
  usePageTitle("Notifications");
  return (
    <section aria-labelledby="notifications-title">
      <h1 id="notifications-title">Notifications</h1>
      <Channels />
      <Rules />
      <Windows />
    </section>
  );
};

const Channels = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const channels = useQuery(trpc.notificationChannels.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.notificationChannels.list.queryKey() });
  const create = useMutation(trpc.notificationChannels.create.mutationOptions({ onSuccess: refresh }));
  const { values, judged } = useFormValues(
    { name: "", type: "email", to: "", webhook_url: "", bot_token: "", chat_id: "", routing_key: "" },
    (name) => (name === "name" || name === "type" ? name : `config.${name}`),
  );
  const type = values.type as ChannelType;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const config: Record<string, unknown> = {};
    for (const { name } of CONFIG_FIELDS[type]) {
      config[name] =
        name === "to"
          ? values.to
              .split(",")
              .map((a) => a.trim())
              .filter(Boolean)
          : values[name];
    }
    create.mutate({ name: values.name, type, config } as Inputs["notificationChannels"]["create"]);
  };
  const { field, unplaced } = judged(create.error);
  const list = channels.data?.data ?? [];
  return (
    <section aria-labelledby="channels-title">
      <h2 id="channels-title">Channels</h2>
      <form onSubmit={submit} className="card" aria-label="Add a channel" noValidate>
        <div className="row">
          <Field label="Channel name" {...field("name")} />
          <SelectField label="Type" {...field("type")} options={TYPES} />
          {CONFIG_FIELDS[type].map((f) => (
            <Field key={f.name} label={f.label} {...field(f.name)} />
          ))}
        </div>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Add channel
        </button>
      </form>
      <QueryState isPending={channels.isPending} error={channels.error} what="channels" />
      {channels.data && list.length === 0 ? <p>No channels yet.</p> : null}
      {list.map((channel) => (
        <ChannelCard key={channel.id} channel={channel} onChange={refresh} />
      ))}
    </section>
  );
};

const ChannelCard = ({ channel, onChange }: { channel: Channel; onChange: () => void }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  // A queued test shows in the log after its first attempt: poll until it does.
  const [awaited, setAwaited] = useState<string | null>(null);
  const deliveries = useQuery({
    ...trpc.notificationChannels.deliveries.queryOptions({ id: channel.id }),
    enabled: open,
    refetchInterval: (query) =>
      awaited !== null && !query.state.data?.data.some((d) => d.id === awaited) ? 2_000 : false,
  });
  const test = useMutation(
    trpc.notificationChannels.test.mutationOptions({
      onSuccess: (answer) => {
        setAwaited(answer.data.id);
        setOpen(true);
        return queryClient.invalidateQueries({
          queryKey: trpc.notificationChannels.deliveries.queryKey({ id: channel.id }),
        });
      },
    }),
  );
  const remove = useMutation(trpc.notificationChannels.delete.mutationOptions({ onSuccess: onChange }));
  const rows = deliveries.data?.data ?? [];
  return (
    <article className="card" aria-label={`Channel ${channel.name}`}>
      <h3>{channel.name}</h3>
      <p>
        {channel.type} ·{" "}
        {Object.entries(channel.config)
          .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : String(v)}`)
          .join(" · ")}
      </p>
      <div className="actions">
        <button type="button" onClick={() => test.mutate({ id: channel.id })} disabled={test.isPending}>
          Send test message
        </button>
        <button type="button" className="secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
          Delivery log
        </button>
        <button
          type="button"
          className="danger"
          aria-label={`Delete channel ${channel.name}`}
          onClick={() => remove.mutate({ id: channel.id })}
        >
          Delete
        </button>
      </div>
      <FormError message={test.error ? messageOf(test.error) : remove.error ? messageOf(remove.error) : undefined} />
      {open ? (
        <>
          <QueryState isPending={deliveries.isPending} error={deliveries.error} what="deliveries" />
          {deliveries.data && rows.length === 0 ? <p>No deliveries yet.</p> : null}
          {rows.length > 0 ? (
            <table aria-label={`Deliveries of ${channel.name}`}>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Error</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((d) => (
                  <tr key={d.id}>
                    <td>{d.event}</td>
                    <td>{d.status}</td>
                    <td>{d.attempts}</td>
                    <td>{d.error ?? "—"}</td>
                    <td>{new Date(d.created_at).toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </>
      ) : null}
    </article>
  );
};

const Rules = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const rules = useQuery(trpc.alertRules.list.queryOptions());
  const channels = useQuery(trpc.notificationChannels.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.alertRules.list.queryKey() });
  const create = useMutation(trpc.alertRules.create.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.alertRules.delete.mutationOptions({ onSuccess: refresh }));
  const { values, judged } = useFormValues(
    { name: "", tags: "", min_offline_seconds: "0", timezone: "", from: "", to: "" },
    (name) =>
      name === "tags"
        ? "routers.tags"
        : name === "timezone" || name === "from" || name === "to"
          ? `quiet_hours.${name}`
          : name,
  );
  const [chosen, setChosen] = useState<string[]>([]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const tags = values.tags
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    create.mutate({
      name: values.name,
      events: ["router.offline", "router.online"],
      channels: chosen,
      min_offline_seconds: numberOrText(values.min_offline_seconds),
      ...(tags.length > 0 ? { routers: { tags } } : {}),
      ...(values.timezone ? { quiet_hours: { timezone: values.timezone, from: values.from, to: values.to } } : {}),
    });
  };
  const { errors, field, unplaced } = judged(create.error, ["channels"]);
  const names = new Map((channels.data?.data ?? []).map((c) => [c.id, c.name]));
  return (
    <section aria-labelledby="rules-title">
      <h2 id="rules-title">Alert rules</h2>
      <form onSubmit={submit} className="card" aria-label="Add an alert rule" noValidate>
        <div className="row">
          <Field label="Rule name" {...field("name")} />
          <Field label="Router tags (comma-separated, optional)" {...field("tags")} />
          <Field label="Minimum offline seconds" {...field("min_offline_seconds")} inputMode="numeric" />
          <Field label="Quiet hours time zone (optional)" {...field("timezone")} />
          <Field label="Quiet from (HH:MM)" {...field("from")} />
          <Field label="Quiet until (HH:MM)" {...field("to")} />
        </div>
        <fieldset>
          <legend>Channels</legend>
          {channels.data?.data.length === 0 ? <p className="hint">Add a channel above first.</p> : null}
          {(channels.data?.data ?? []).map((c) => (
            <label key={c.id} className="check">
              <input
                type="checkbox"
                checked={chosen.includes(c.id)}
                onChange={(e) => setChosen(e.target.checked ? [...chosen, c.id] : chosen.filter((id) => id !== c.id))}
              />
              {c.name}
            </label>
          ))}
          {errors.channels ? <span className="error">{errors.channels.join(" ")}</span> : null}
        </fieldset>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Add rule
        </button>
      </form>
      <QueryState isPending={rules.isPending} error={rules.error} what="alert rules" />
      <ul>
        {(rules.data?.data ?? []).map((rule) => (
          <li key={rule.id}>
            {rule.name}: {rule.events.join(", ")} → {rule.channels.map((id) => names.get(id) ?? id).join(", ")}
            {rule.min_offline_seconds ? ` · after ${rule.min_offline_seconds} s` : ""}
            {rule.quiet_hours
              ? ` · quiet ${rule.quiet_hours.from}-${rule.quiet_hours.to} ${rule.quiet_hours.timezone}`
              : ""}{" "}
            <button type="button" className="danger" onClick={() => remove.mutate({ id: rule.id })}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
};

const Windows = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const windows = useQuery(trpc.maintenanceWindows.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.maintenanceWindows.list.queryKey() });
  const create = useMutation(trpc.maintenanceWindows.create.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.maintenanceWindows.delete.mutationOptions({ onSuccess: refresh }));
  const { values, judged } = useFormValues({ name: "", tags: "", starts_at: "", ends_at: "" }, (name) =>
    name === "tags" ? "routers.tags" : name,
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const tags = values.tags
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    create.mutate({
      name: values.name,
      starts_at: values.starts_at,
      ends_at: values.ends_at,
      ...(tags.length > 0 ? { routers: { tags } } : {}),
    });
  };
  const { field, unplaced } = judged(create.error);
  return (
    <section aria-labelledby="windows-title">
      <h2 id="windows-title">Maintenance windows</h2>
      <form onSubmit={submit} className="card" aria-label="Add a maintenance window" noValidate>
        <div className="row">
          <Field label="Window name" {...field("name")} />
          <Field label="Router tags (comma-separated, optional)" {...field("tags")} />
          <Field label="Starts at (ISO 8601)" {...field("starts_at")} placeholder="2026-12-01T22:00:00Z" />
          <Field label="Ends at (ISO 8601)" {...field("ends_at")} placeholder="2026-12-02T02:00:00Z" />
        </div>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Add window
        </button>
      </form>
      <QueryState isPending={windows.isPending} error={windows.error} what="maintenance windows" />
      <ul>
        {(windows.data?.data ?? []).map((w) => (
          <li key={w.id}>
            {w.name}:{" "}
            {w.weekly
              ? `${w.weekly.days.join(", ")} ${w.weekly.from} for ${w.weekly.duration_minutes} min (${w.weekly.timezone})`
              : `${w.starts_at} → ${w.ends_at}`}{" "}
            <button type="button" className="danger" onClick={() => remove.mutate({ id: w.id })}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
};
