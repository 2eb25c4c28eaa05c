import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { Field, FormError } from "../components/field.tsx";
import { useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Inputs, messageOf, type Outputs, useTRPC } from "../trpc.ts";

type EventName = Inputs["webhooks"]["create"]["events"][number];
/** The events most receivers want, offered one by one (checked against the server's input type). */
const EVENTS = [
  "router.offline",
  "router.online",
  "router.enrolled",
  "router.removed",
  "forward.created",
  "forward.revoked",
  "forward.expired",
] as const satisfies readonly EventName[];

type Webhook = Outputs["webhooks"]["list"]["data"][number];

/** docs/console.md "Webhooks": receivers, their secret shown once, a test send and the delivery log. */
export const WebhooksPage = () => {
  usePageTitle("Webhooks");
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const hooks = useQuery(trpc.webhooks.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.list.queryKey() });
  const create = useMutation(trpc.webhooks.create.mutationOptions({ onSuccess: refresh }));
  const { values, judged } = useFormValues({ url: "", description: "" });
  const [all, setAll] = useState(true);
  const [events, setEvents] = useState<EventName[]>(["router.offline", "router.online"]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const { url, description } = values;
    create.mutate({ url, events: all ? ["*"] : events, ...(description ? { description } : {}) });
  };
  const { errors, field, unplaced } = judged(create.error, ["events"]);
  const list = hooks.data?.data ?? [];
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <form onSubmit={submit} className="card" aria-labelledby="new-webhook-title" noValidate>
        <h2 id="new-webhook-title">Add a receiver</h2>
        <div className="row">
          <Field label="Receiver URL" {...field("url")} type="url" />
          <Field label="Description (optional)" {...field("description")} />
        </div>
        <fieldset>
          <legend>Events</legend>
          <label className="check">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} />
            All events
          </label>
          {all
            ? null
            : EVENTS.map((name) => (
                <label key={name} className="check">
                  <input
                    type="checkbox"
                    checked={events.includes(name)}
                    onChange={(e) => setEvents(e.target.checked ? [...events, name] : events.filter((n) => n !== name))}
                  />
                  {name}
                </label>
              ))}
          {errors.events ? <span className="error">{errors.events.join(" ")}</span> : null}
        </fieldset>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Add webhook
        </button>
      </form>
      {create.data ? (
        <section className="card notice" aria-labelledby="secret-title">
          <h2 id="secret-title">Signing secret</h2>
          <p>Verify every delivery with it. It is shown only this once.</p>
          <div className="field">
            <label htmlFor="webhook-secret">Webhook signing secret</label>
            <input id="webhook-secret" readOnly value={create.data.data.secret} />
          </div>
          <CopyButton text={create.data.data.secret} label="Copy signing secret" />
        </section>
      ) : null}
      <QueryState isPending={hooks.isPending} error={hooks.error} what="webhooks" />
      {hooks.data && list.length === 0 ? <p>No webhooks yet.</p> : null}
      {list.map((hook) => (
        <WebhookCard key={hook.id} hook={hook} onChange={refresh} />
      ))}
    </section>
  );
};

const WebhookCard = ({ hook, onChange }: { hook: Webhook; onChange: () => void }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const deliveries = useQuery({
    ...trpc.webhooks.deliveries.queryOptions({ id: hook.id }),
    enabled: open,
    // While a delivery is still being tried, the open log follows it.
    refetchInterval: (query) => (query.state.data?.data.some((d) => d.status === "pending") ? 2_000 : false),
  });
  const test = useMutation(
    trpc.webhooks.test.mutationOptions({
      onSuccess: () => {
        setOpen(true);
        return queryClient.invalidateQueries({ queryKey: trpc.webhooks.deliveries.queryKey({ id: hook.id }) });
      },
    }),
  );
  const remove = useMutation(trpc.webhooks.delete.mutationOptions({ onSuccess: onChange }));
  const rows = deliveries.data?.data ?? [];
  return (
    <article className="card" aria-label={`Webhook ${hook.url}`}>
      <h2 className="url">{hook.url}</h2>
      <p>
        {hook.description ? `${hook.description} · ` : ""}
        {hook.events.includes("*") ? "all events" : hook.events.join(", ")} · {hook.format} format
        {hook.disabled_at ? ` · disabled since ${new Date(hook.disabled_at).toLocaleString()}` : ""}
      </p>
      <div className="actions">
        <button type="button" onClick={() => test.mutate({ id: hook.id })} disabled={test.isPending}>
          Send test event
        </button>
        <button type="button" className="secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
          Delivery log
        </button>
        <button
          type="button"
          className="danger"
          aria-label={`Delete webhook ${hook.url}`}
          onClick={() => remove.mutate({ id: hook.id })}
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
            <table aria-label={`Deliveries of ${hook.url}`}>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Answer</th>
                  <th scope="col">Last attempt</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((d) => (
                  <tr key={d.id}>
                    <td>{d.event_type}</td>
                    <td>{d.status}</td>
                    <td>{d.attempts}</td>
                    <td>{d.response_status ?? d.error ?? "—"}</td>
                    <td>{d.last_attempt_at ? new Date(d.last_attempt_at).toLocaleString() : "—"}</td>
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
