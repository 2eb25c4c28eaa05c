import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { CopyButton } from "../components/copy-button.tsx";
import { Field, FormError } from "../components/field.tsx";
import { usePageTitle } from "../components/hooks.ts";
import { Link } from "../navigation.tsx";
import { fieldErrors, messageOf, useTRPC } from "../trpc.ts";

/** docs/console.md "Enroll": create the router, then show the one line to paste into RouterOS. */
export const EnrollPage = () => {
  usePageTitle("Enroll a router");
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const enroll = useMutation(
    trpc.routers.enroll.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.routers.pathKey() }),
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    enroll.mutate(name.trim() ? { name: name.trim() } : {});
  };
  const errors = fieldErrors(enroll.error);
  // Only the answer to the latest submission: while another one runs, the old command is hidden.
  const enrolled = enroll.isSuccess ? enroll.data.data : undefined;
  const enrolledName = enroll.variables?.name;
  return (
    <section aria-labelledby="enroll-title">
      <h1 id="enroll-title">Enroll a router</h1>
      <form onSubmit={submit} className="card" aria-label="Enroll">
        <Field
          label="Name (optional)"
          name="name"
          value={name}
          maxLength={100}
          onChange={(e) => setName(e.target.value)}
          errors={errors.name}
        />
        <FormError message={enroll.error && !errors.name ? messageOf(enroll.error) : undefined} />
        <button type="submit" disabled={enroll.isPending}>
          Enroll router
        </button>
      </form>
      {enrolled ? (
        <section className="card" aria-labelledby="adopt-title">
          <h2 id="adopt-title">{enrolledName ? `Adopt ${enrolledName}` : "Adopt the router"}</h2>
          <p>
            Paste this line into the router's RouterOS 7 terminal. It installs the management user, the agent's key and
            the heartbeat scheduler. It works once, until {new Date(enrolled.adoption.expires_at).toLocaleString()}.
          </p>
          <div className="field">
            <label htmlFor="adoption-command">Adoption command</label>
            <textarea id="adoption-command" readOnly rows={3} value={enrolled.adoption.command} spellCheck={false} />
          </div>
          <CopyButton text={enrolled.adoption.command} label="Copy adoption command" />
          <p>
            Tunnel address: <code>{enrolled.tunnel_ip}</code>.{" "}
            <Link to={`/routers/${enrolled.router.id}`}>Open the router</Link>
          </p>
        </section>
      ) : null}
    </section>
  );
};
