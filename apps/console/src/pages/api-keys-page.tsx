import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { Field, FormError } from "../components/field.tsx";
import { numberOrText, useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { type Inputs, type Outputs, useTRPC } from "../trpc.ts";

type Scope = Inputs["apiKeys"]["create"]["scopes"][number];
/** The scopes a user's key may carry (checked against the server's input type). */
const SCOPES = ["routers:read", "routers:write", "account:read", "account:write"] as const satisfies readonly Scope[];

/** docs/console.md "API keys": a key is shown once, at creation, with a copy button. */
export const ApiKeysPage = () => {
  usePageTitle("API keys");
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() });
  const create = useMutation(trpc.apiKeys.create.mutationOptions({ onSuccess: refresh }));
  const revoke = useMutation(trpc.apiKeys.delete.mutationOptions({ onSuccess: refresh }));
  const { values, judged } = useFormValues({ name: "", expires_in_days: "" });
  const [scopes, setScopes] = useState<Scope[]>(["routers:read"]);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const days = values.expires_in_days;
    create.mutate({ name: values.name, scopes, ...(days.trim() ? { expires_in_days: numberOrText(days) } : {}) });
  };
  const { errors, field, unplaced } = judged(create.error, ["scopes"]);
  const list = keys.data ?? [];
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <p className="hint">
        For scripts and integrations: send a key as <code>Authorization: Bearer &lt;key&gt;</code>.
      </p>
      <form onSubmit={submit} className="card" aria-labelledby="new-key-title" noValidate>
        <h2 id="new-key-title">Create a key</h2>
        <div className="row">
          <Field label="Key name" {...field("name")} />
          <Field
            label="Expires after days (optional)"
            {...field("expires_in_days")}
            inputMode="numeric"
            hint="1 to 365; empty: never"
          />
        </div>
        <fieldset aria-describedby={errors.scopes ? "scopes-error" : undefined}>
          <legend>Scopes</legend>
          {SCOPES.map((scope) => (
            <label key={scope} className="check">
              <input
                type="checkbox"
                checked={scopes.includes(scope)}
                onChange={(e) => setScopes(e.target.checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
              />
              {scope}
            </label>
          ))}
          {errors.scopes ? (
            <span id="scopes-error" className="error">
              {errors.scopes.join(" ")}
            </span>
          ) : null}
        </fieldset>
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Create key
        </button>
      </form>
      {create.data ? (
        <section className="card notice" aria-labelledby="new-key-shown">
          <h2 id="new-key-shown">Your new key “{create.data.name}”</h2>
          <p>Copy it now: it is shown only this once and stored only as a hash.</p>
          <div className="field">
            <label htmlFor="new-key">New API key</label>
            <input id="new-key" readOnly value={create.data.key} spellCheck={false} />
          </div>
          <CopyButton text={create.data.key} label="Copy API key" />
        </section>
      ) : null}
      <QueryState isPending={keys.isPending} error={keys.error} what="keys" />
      {keys.data && list.length === 0 ? <p>No keys yet.</p> : null}
      {list.length > 0 ? (
        <KeysTable list={list} onRevoke={(id) => revoke.mutate({ id })} revoking={revoke.isPending} />
      ) : null}
    </section>
  );
};

const KeysTable = ({
  list,
  onRevoke,
  revoking,
}: {
  list: Outputs["apiKeys"]["list"];
  onRevoke: (id: string) => void;
  revoking: boolean;
}) => (
  <table aria-label="API keys">
    <thead>
      <tr>
        <th scope="col">Name</th>
        <th scope="col">Prefix</th>
        <th scope="col">Scopes</th>
        <th scope="col">Created</th>
        <th scope="col">Expires</th>
        <th scope="col">Last used</th>
        <th scope="col">
          <span className="visually-hidden">Actions</span>
        </th>
      </tr>
    </thead>
    <tbody>
      {list.map((key) => (
        <tr key={key.id}>
          <td>{key.name}</td>
          <td>
            <code>{key.prefix}</code>
          </td>
          <td>{key.scopes.join(", ")}</td>
          <td>{new Date(key.created_at).toLocaleString()}</td>
          <td>{key.expires_at ? new Date(key.expires_at).toLocaleDateString() : "never"}</td>
          <td>{key.last_used_at ? new Date(key.last_used_at).toLocaleString() : "never"}</td>
          <td>
            <button
              type="button"
              className="danger"
              aria-label={`Revoke key ${key.name}`}
              disabled={revoking}
              onClick={() => onRevoke(key.id)}
            >
              Revoke
            </button>
          </td>
        </tr>
      ))}
    </tbody>
  </table>
);
