import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Field, FormError } from "../components/field.tsx";
import { useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { messageOf, type Outputs, useTRPC } from "../trpc.ts";

type Organization = Outputs["organizations"]["list"]["data"][number];

/**
 * docs/api.md "Organizations": the customers below the signed-in organization (its children),
 * with their router and online counts; create, rename and delete them.
 */
export const CustomersPage = () => {
  usePageTitle("Customers");
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const tree = useQuery(trpc.organizations.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.organizations.list.queryKey() });
  const create = useMutation(trpc.organizations.create.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.organizations.delete.mutationOptions({ onSuccess: refresh }));
  const { values, setValues, judged } = useFormValues({ name: "" });
  const { field, unplaced } = judged(create.error);
  const own = tree.data?.data[0];
  const children = (tree.data?.data ?? []).filter((o) => own && o.parent_id === own.id);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ name: values.name }, { onSuccess: () => setValues({ name: "" }) });
  };
  return (
    <section aria-labelledby="customers-title">
      <h1 id="customers-title">Customers</h1>
      <p className="hint">
        Organizations below {own ? <strong>{own.name}</strong> : "yours"}: it pays for them, and its people act in them
        through their roles.
      </p>
      <form onSubmit={submit} className="card" aria-labelledby="new-customer-title" noValidate>
        <h2 id="new-customer-title">Add a customer</h2>
        <Field label="Customer name" {...field("name")} />
        <FormError message={unplaced} />
        <button type="submit" disabled={create.isPending}>
          Add customer
        </button>
      </form>
      <QueryState isPending={tree.isPending} error={tree.error} what="customers" />
      {remove.error ? (
        <p role="alert" className="form-error">
          {messageOf(remove.error)}
        </p>
      ) : null}
      {tree.data && children.length === 0 ? <p>No customers yet.</p> : null}
      {children.length > 0 ? (
        <table aria-label="Customers">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Routers</th>
              <th scope="col">Online</th>
              <th scope="col">Your role</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {children.map((o) => (
              <CustomerRow
                key={o.id}
                organization={o}
                onDelete={() => remove.mutate({ id: o.id })}
                onRenamed={refresh}
              />
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
};

const CustomerRow = ({
  organization,
  onDelete,
  onRenamed,
}: {
  organization: Organization;
  onDelete: () => void;
  onRenamed: () => void;
}) => {
  const trpc = useTRPC();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(organization.name);
  const rename = useMutation(
    trpc.organizations.update.mutationOptions({
      onSuccess: () => {
        setEditing(false);
        onRenamed();
      },
    }),
  );
  const save = (event: FormEvent) => {
    event.preventDefault();
    rename.mutate({ id: organization.id, name });
  };
  return (
    <tr>
      <td>
        {editing ? (
          <form onSubmit={save} noValidate>
            <Field
              label={`New name for ${organization.name}`}
              value={name}
              onChange={(e) => setName(e.target.value)}
              errors={rename.error ? [messageOf(rename.error)] : undefined}
            />
            <button type="submit" disabled={rename.isPending}>
              Save
            </button>
          </form>
        ) : (
          organization.name
        )}
      </td>
      <td>{organization.routers}</td>
      <td>{organization.online ?? "-"}</td>
      <td>{organization.role ?? "-"}</td>
      <td>
        {editing ? null : (
          <button type="button" className="secondary" onClick={() => setEditing(true)}>
            Rename<span className="visually-hidden"> {organization.name}</span>
          </button>
        )}
        <button type="button" className="danger" aria-label={`Delete customer ${organization.name}`} onClick={onDelete}>
          Delete
        </button>
      </td>
    </tr>
  );
};
