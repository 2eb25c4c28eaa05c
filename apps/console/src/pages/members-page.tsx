import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { Field, FormError, SelectField } from "../components/field.tsx";
import { useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Inputs, messageOf, type Outputs, useTRPC } from "../trpc.ts";

type Role = Inputs["invitations"]["create"]["role"];
const ROLES = ["owner", "admin", "billing", "technician", "viewer"] as const satisfies readonly Role[];
const ROLE_OPTIONS = ROLES.map((r) => ({ value: r, label: r }));
type Member = Outputs["members"]["list"]["data"][number];

/**
 * docs/api.md "Members and invitations": who acts in the signed-in organization, with their role
 * and where it is held; invite with a role, change a role, remove, revoke pending invitations.
 */
export const MembersPage = () => {
  usePageTitle("Members");
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const tree = useQuery(trpc.organizations.list.queryOptions());
  // The organizations above this one are not in its tree; those the user is a member of are in `me`.
  const me = useQuery(trpc.me.get.queryOptions());
  const own = tree.data?.data[0];
  const id = own?.id ?? "";
  const members = useQuery({ ...trpc.members.list.queryOptions({ id }), enabled: own !== undefined });
  const invitations = useQuery({
    ...trpc.invitations.list.queryOptions({ id }),
    enabled: own !== undefined && (own.role === "owner" || own.role === "admin"),
  });
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.members.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.invitations.list.queryKey() }),
    ]);
  const invite = useMutation(trpc.invitations.create.mutationOptions({ onSuccess: refresh }));
  const revoke = useMutation(trpc.invitations.revoke.mutationOptions({ onSuccess: refresh }));
  const update = useMutation(trpc.members.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.members.remove.mutationOptions({ onSuccess: refresh }));
  const { values, judged } = useFormValues({ email: "", role: "technician" });
  const { field, unplaced } = judged(invite.error);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    invite.mutate({ id, email: values.email, role: values.role as Role });
  };
  const nameOf = (organizationId: string) =>
    [...(tree.data?.data ?? []), ...(me.data?.organizations ?? [])].find((o) => o.id === organizationId)?.name ??
    "an organization above";
  const changeError = update.error ?? remove.error ?? revoke.error;
  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members{own ? ` of ${own.name}` : ""}</h1>
      <form onSubmit={submit} className="card" aria-labelledby="invite-title" noValidate>
        <h2 id="invite-title">Invite someone</h2>
        <div className="row">
          <Field label="Email" type="email" {...field("email")} />
          <SelectField label="Role" options={ROLE_OPTIONS} {...field("role")} />
        </div>
        <FormError message={unplaced} />
        <button type="submit" disabled={invite.isPending || !own}>
          Send invitation
        </button>
      </form>
      {invite.data ? (
        <section className="card notice" aria-labelledby="invitation-link">
          <h2 id="invitation-link">Invitation for {invite.data.email}</h2>
          <p>The link is shown only now (and mailed when the server sends mail). It is valid for 7 days, once.</p>
          <div className="field">
            <label htmlFor="invitation-url">Invitation link</label>
            <input id="invitation-url" readOnly value={invite.data.url} spellCheck={false} />
          </div>
          <CopyButton text={invite.data.url} label="Copy invitation link" />
        </section>
      ) : null}
      {changeError ? (
        <p role="alert" className="form-error">
          {messageOf(changeError)}
        </p>
      ) : null}
      <QueryState isPending={members.isPending && own !== undefined} error={members.error} what="members" />
      {members.data ? (
        <table aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Held in</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.data.map((m: Member) => {
              const here = m.organization_id === id;
              return (
                <tr key={m.user_id}>
                  <td>{m.email}</td>
                  <td>
                    {here ? (
                      <label>
                        <span className="visually-hidden">Role of {m.email}</span>
                        <select
                          value={m.role}
                          onChange={(e) => update.mutate({ id, user_id: m.user_id, role: e.target.value as Role })}
                        >
                          {ROLES.map((r) => (
                            <option key={r} value={r}>
                              {r}
                            </option>
                          ))}
                        </select>
                      </label>
                    ) : (
                      m.role
                    )}
                  </td>
                  <td>{here ? "this organization" : `inherited from ${nameOf(m.organization_id)}`}</td>
                  <td>
                    {here ? (
                      <button
                        type="button"
                        className="danger"
                        aria-label={`Remove ${m.email}`}
                        onClick={() => remove.mutate({ id, user_id: m.user_id })}
                      >
                        Remove
                      </button>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
      {invitations.data && invitations.data.data.length > 0 ? (
        <>
          <h2>Pending invitations</h2>
          <table aria-label="Pending invitations">
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {invitations.data.data.map((i) => (
                <tr key={i.id}>
                  <td>{i.email}</td>
                  <td>{i.role}</td>
                  <td>{new Date(i.expires_at).toLocaleString()}</td>
                  <td>
                    <button
                      type="button"
                      className="danger"
                      aria-label={`Revoke the invitation of ${i.email}`}
                      onClick={() => revoke.mutate({ id, invitation_id: i.id })}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </section>
  );
};
