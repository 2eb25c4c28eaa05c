import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { Field, FormError, SelectField } from "../components/field.tsx";
import { numberOrText, useFormValues } from "../components/form-state.ts";
import { countdown, useNow } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Inputs, messageOf, type Outputs, useTRPC } from "../trpc.ts";

type Access = Outputs["access"]["list"]["data"][number];
type Service = Inputs["access"]["create"]["service"];
type Level = Inputs["access"]["create"]["level"];

/** The services and levels offered (checked against the server's input type). */
const SERVICES = [
  { value: "ssh", label: "SSH" },
  { value: "winbox", label: "WinBox" },
  { value: "webfig", label: "WebFig" },
] as const satisfies ReadonlyArray<{ value: Service; label: string }>;
const LEVELS = [
  { value: "read", label: "Read only" },
  { value: "full", label: "Full (no passwords, no sensitive data)" },
] as const satisfies ReadonlyArray<{ value: Level; label: string }>;

const serviceName = (service: Service): string => SERVICES.find((s) => s.value === service)?.label ?? service;

/** What the engineer types or opens to reach the router through the entry point. */
export const connectLine = (access: Pick<Access, "service" | "username" | "entry_point" | "port">): string => {
  if (access.service === "ssh") return `ssh -p ${access.port} ${access.username}@${access.entry_point}`;
  if (access.service === "webfig") return `http://${access.entry_point}:${access.port}/`;
  return `winbox ${access.entry_point}:${access.port} (user ${access.username})`;
};

/** The answer to a create: the one time its password is shown. */
const CreatedAccess = ({ created }: { created: Outputs["access"]["create"]["data"] }) => (
  <section className="card notice" aria-labelledby="access-created-title">
    <h3 id="access-created-title">
      {serviceName(created.service)} access opened for {created.username}
    </h3>
    <p>Copy the password now: it is shown only this once and stored nowhere.</p>
    <div className="field">
      <label htmlFor="access-password">Temporary password</label>
      <input id="access-password" readOnly value={created.password} spellCheck={false} />
    </div>
    <CopyButton text={created.password} label="Copy temporary password" />
    <p>
      <code>{connectLine(created)}</code>{" "}
      <CopyButton text={connectLine(created)} label={`Copy connect line for ${created.username}`} />
    </p>
  </section>
);

const ActiveAccess = ({
  active,
  now,
  onRevoke,
  revoking,
}: {
  active: Access[];
  now: number;
  onRevoke: (id: string) => void;
  /** The session whose revocation is under way, if any. */
  revoking: string | undefined;
}) => (
  <table aria-label="Active access">
    <thead>
      <tr>
        <th scope="col">Service</th>
        <th scope="col">User</th>
        <th scope="col">Connect</th>
        <th scope="col">Allowed from</th>
        <th scope="col">Closes in</th>
        <th scope="col">
          <span className="visually-hidden">Actions</span>
        </th>
      </tr>
    </thead>
    <tbody>
      {active.map((access) => {
        const what = `${serviceName(access.service)} access ${access.username}`;
        return (
          <tr key={access.id}>
            <td>
              {serviceName(access.service)}, {access.level === "full" ? "full" : "read only"}
            </td>
            <td>{access.username}</td>
            <td>
              <code>{connectLine(access)}</code>
            </td>
            <td>{access.allow_only_cidr}</td>
            <td>
              <time dateTime={access.expires_at} title={new Date(access.expires_at).toLocaleString()}>
                {countdown(Date.parse(access.expires_at) - now)}
              </time>
            </td>
            <td>
              <button
                type="button"
                className="danger"
                onClick={() => onRevoke(access.id)}
                disabled={revoking === access.id}
                aria-label={`Revoke ${what}`}
              >
                Revoke
              </button>
            </td>
          </tr>
        );
      })}
    </tbody>
  </table>
);

/**
 * docs/console.md "Router": temporary WinBox, SSH or WebFig access to the router itself. The
 * password is in the create answer only: it is shown once, until the form is used again, that
 * session is revoked or the page is left, and nothing keeps it.
 */
export const AccessSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const now = useNow();
  const sessions = useQuery(trpc.access.list.queryOptions({ router_id: routerId }));
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.access.list.queryKey({ router_id: routerId }) });
  const create = useMutation(trpc.access.create.mutationOptions({ onSuccess: refresh }));
  const revoke = useMutation(
    trpc.access.revoke.mutationOptions({
      onSuccess: (_, { id }) => {
        // A revoked session's password is of no use any more: stop showing it.
        if (create.data?.data.id === id) create.reset();
        return refresh();
      },
    }),
  );
  const { values: form, judged } = useFormValues<{
    service: Service;
    level: Level;
    expire_after_minutes: string;
    allow_from: string;
  }>({ service: "ssh", level: "read", expire_after_minutes: "60", allow_from: "" });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({
      router_id: routerId,
      service: form.service,
      level: form.level,
      expire_after_minutes: numberOrText(form.expire_after_minutes),
      allow_from: form.allow_from.trim(),
    });
  };
  const { field, unplaced } = judged(create.error);
  const active = (sessions.data?.data ?? []).filter(
    (a) => !a.expired && !a.revoked_early && Date.parse(a.expires_at) > now,
  );
  const created = create.data?.data;

  return (
    <>
      {created ? <CreatedAccess created={created} /> : null}
      <QueryState isPending={sessions.isPending} error={sessions.error} what="access sessions" />
      {sessions.data && active.length === 0 ? <p>No active access.</p> : null}
      {active.length > 0 ? (
        <ActiveAccess
          active={active}
          now={now}
          onRevoke={(id) => revoke.mutate({ router_id: routerId, id })}
          revoking={revoke.isPending ? revoke.variables?.id : undefined}
        />
      ) : null}
      {revoke.error ? <FormError message={`Could not revoke: ${messageOf(revoke.error)}`} /> : null}
      <form onSubmit={submit} aria-labelledby="new-access-title" className="subform">
        <h3 id="new-access-title">Open access to the router</h3>
        <div className="row">
          <SelectField label="Service" {...field("service")} options={SERVICES} />
          <SelectField label="Level" {...field("level")} options={LEVELS} />
          <Field label="Access from" {...field("allow_from")} placeholder="203.0.113.7 or 203.0.113.0/24" />
          <Field label="Minutes of access" {...field("expire_after_minutes")} inputMode="numeric" hint="15 to 1440" />
        </div>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Open access
        </button>
      </form>
    </>
  );
};
