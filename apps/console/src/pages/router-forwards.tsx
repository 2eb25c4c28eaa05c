import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { Field, FormError } from "../components/field.tsx";
import { numberOrText, useFormValues } from "../components/form-state.ts";
import { countdown, useNow } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Forward, messageOf, useTRPC } from "../trpc.ts";

/** docs/console.md "Router": open forwards with a live countdown and a connect line; open and revoke. */
export const ForwardsSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const now = useNow();
  const forwards = useQuery(trpc.forwards.list.queryOptions({ router_id: routerId }));
  const refresh = () =>
    queryClient.invalidateQueries({ queryKey: trpc.forwards.list.queryKey({ router_id: routerId }) });
  const revoke = useMutation(trpc.forwards.delete.mutationOptions({ onSuccess: refresh }));
  const {
    values: form,
    setValues,
    judged,
  } = useFormValues({
    dst_address: "",
    dst_port: "80",
    allow_from: "",
    expire_after_minutes: "60",
  });
  const create = useMutation(
    trpc.forwards.create.mutationOptions({
      onSuccess: () => {
        setValues((f) => ({ ...f, dst_address: "" }));
        return refresh();
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({
      router_id: routerId,
      dst_address: form.dst_address.trim(),
      dst_port: numberOrText(form.dst_port),
      allow_from: form.allow_from.trim(),
      expire_after_minutes: numberOrText(form.expire_after_minutes),
    });
  };
  const { field, unplaced } = judged(create.error);
  const all = forwards.data ?? [];
  const open = all.filter((f) => !f.expired && !f.revoked_early && Date.parse(f.expires_at) > now);
  const closed = all.length - open.length;

  return (
    <>
      <QueryState isPending={forwards.isPending} error={forwards.error} what="forwards" />
      {forwards.data && open.length === 0 ? <p>No open forwards.</p> : null}
      {open.length > 0 ? (
        <table aria-label="Open forwards">
          <thead>
            <tr>
              <th scope="col">To</th>
              <th scope="col">Connect</th>
              <th scope="col">Allowed from</th>
              <th scope="col">Closes in</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {open.map((forward) => (
              <ForwardRow
                key={forward.id}
                forward={forward}
                now={now}
                onRevoke={() => revoke.mutate({ router_id: routerId, id: forward.id })}
                revoking={revoke.isPending && revoke.variables?.id === forward.id}
              />
            ))}
          </tbody>
        </table>
      ) : null}
      {revoke.error ? <FormError message={`Could not revoke: ${messageOf(revoke.error)}`} /> : null}
      {closed > 0 ? <p className="hint">{closed} closed or expired forwards are not shown.</p> : null}
      <form onSubmit={submit} aria-labelledby="new-forward-title" className="subform">
        <h3 id="new-forward-title">Open a forward</h3>
        <div className="row">
          <Field label="LAN address" {...field("dst_address")} placeholder="192.168.88.10" />
          <Field label="LAN port" {...field("dst_port")} inputMode="numeric" />
          <Field label="Allow from" {...field("allow_from")} placeholder="203.0.113.7 or 203.0.113.0/24" />
          <Field label="Minutes open" {...field("expire_after_minutes")} inputMode="numeric" hint="10 to 1440" />
        </div>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Open forward
        </button>
      </form>
    </>
  );
};

const ForwardRow = ({
  forward,
  now,
  onRevoke,
  revoking,
}: {
  forward: Forward;
  now: number;
  onRevoke: () => void;
  revoking: boolean;
}) => {
  const connect = `connect to ${forward.entry_point}:${forward.port}`;
  const target = `${forward.dst_address}:${forward.dst_port}`;
  return (
    <tr>
      <td>{target}</td>
      <td>
        <code>{connect}</code> <CopyButton text={connect} label={`Copy connect line for ${target}`} />
      </td>
      <td>{forward.allow_only_cidr}</td>
      <td>
        <time dateTime={forward.expires_at} title={new Date(forward.expires_at).toLocaleString()}>
          {countdown(Date.parse(forward.expires_at) - now)}
        </time>
      </td>
      <td>
        <button
          type="button"
          className="danger"
          onClick={onRevoke}
          disabled={revoking}
          aria-label={`Revoke forward to ${target}`}
        >
          Revoke
        </button>
      </td>
    </tr>
  );
};
