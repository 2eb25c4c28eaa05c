import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useRef, useState } from "react";
import { Field, FormError } from "../components/field.tsx";
import { useFormValues } from "../components/form-state.ts";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { pageConfig } from "../page-config.ts";
import {
  type CardDetails,
  confirmCardWithEmulator,
  confirmCardWithStripe,
  ProcessorError,
  type StripeCardElement,
  stripeJs,
} from "../processor.ts";
import { httpStatus, messageOf, type Outputs, useTRPC } from "../trpc.ts";

type Account = Outputs["account"]["get"];

/** docs/console.md "Billing": the account, cards through the processor's client-side flow, invoices. */
export const BillingPage = () => {
  usePageTitle("Billing");
  const trpc = useTRPC();
  const account = useQuery(trpc.account.get.queryOptions());
  // 422 is the "no billing account yet" answer: the page offers to create one.
  const missing = httpStatus(account.error) === 422;
  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Billing</h1>
      {missing ? (
        <CreateAccountForm />
      ) : (
        <QueryState isPending={account.isPending} error={account.error} what="the account" />
      )}
      {account.data ? (
        <>
          <AccountForm account={account.data} />
          <Cards />
          <Invoices />
        </>
      ) : null}
    </section>
  );
};

const CreateAccountForm = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { values: form, judged } = useFormValues({ name: "", email: "", country: "" }, (name) =>
    name === "country" ? "address.country" : name,
  );
  const create = useMutation(
    trpc.account.create.mutationOptions({
      onSuccess: (account) => queryClient.setQueryData(trpc.account.get.queryKey(), account),
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ name: form.name, email: form.email, address: { country: form.country.trim().toUpperCase() } });
  };
  const { field, unplaced } = judged(create.error);
  return (
    <form onSubmit={submit} className="card" aria-labelledby="create-account-title" noValidate>
      <h2 id="create-account-title">Create the billing account</h2>
      <p className="hint">Routers, forwards and invoices are billed to this account.</p>
      <Field label="Company or name" {...field("name")} autoComplete="organization" />
      <Field label="Billing email" {...field("email")} type="email" autoComplete="email" />
      <Field
        label="Country"
        {...field("country")}
        autoComplete="country"
        hint="Two-letter code, such as DE or US"
        maxLength={2}
      />
      <FormError message={unplaced} />
      <button type="submit" disabled={create.isPending}>
        Create account
      </button>
    </form>
  );
};

const ADDRESS = [
  ["line1", "Address line 1", "address-line1"],
  ["line2", "Address line 2", "address-line2"],
  ["postal_code", "Postal code", "postal-code"],
  ["city", "City", "address-level2"],
  ["state", "State or region", "address-level1"],
  ["country", "Country", "country"],
] as const;

const AccountForm = ({ account }: { account: Account }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const { values: form, judged } = useFormValues(
    { name: account.name, email: account.email, ...account.address },
    (name) => (name === "name" || name === "email" ? name : `address.${name}`),
  );
  const [saved, setSaved] = useState(false);
  const update = useMutation(
    trpc.account.update.mutationOptions({
      onSuccess: (next) => {
        queryClient.setQueryData(trpc.account.get.queryKey(), next);
        setSaved(true);
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const { name, email, ...address } = form;
    update.mutate({ name, email, address: { ...address, country: address.country.trim().toUpperCase() } });
  };
  const { field, unplaced } = judged(update.error);
  return (
    <form onSubmit={submit} className="card" aria-labelledby="account-title" noValidate>
      <h2 id="account-title">Billing account</h2>
      <div className="row">
        <Field label="Company or name" {...field("name")} />
        <Field label="Billing email" {...field("email")} type="email" />
      </div>
      <div className="row">
        {ADDRESS.map(([key, label, autoComplete]) => (
          <Field key={key} label={label} {...field(key)} autoComplete={autoComplete} />
        ))}
      </div>
      <FormError message={unplaced} />
      <button type="submit" disabled={update.isPending}>
        Save account
      </button>{" "}
      <span role="status">{saved ? "Saved" : ""}</span>
    </form>
  );
};

type CardField = keyof CardDetails;

/** The cards on file; the first is the default. */
const SavedCards = ({ list }: { list: Outputs["paymentMethods"]["list"] }) => (
  <ul aria-label="Saved cards" className="plain">
    {list.map((pm, index) => (
      <li key={pm.id}>
        {pm.brand} ending in {pm.last4}, expires {String(pm.exp_month).padStart(2, "0")}/{pm.exp_year}
        {index === 0 ? " (default)" : ""}
      </li>
    ))}
  </ul>
);

/** Development only: the card's fields for the built-in Stripe emulator (with real keys Stripe's iframe takes them). */
const EmulatorCardFields = ({
  card,
  onCard,
  errorFor,
}: {
  card: CardDetails;
  onCard: (card: CardDetails) => void;
  errorFor: (field: CardField) => string[] | undefined;
}) => (
  <div className="row">
    <Field
      label="Card number"
      name="cardnumber"
      autoComplete="cc-number"
      inputMode="numeric"
      value={card.number}
      onChange={(e) => onCard({ ...card, number: e.target.value })}
      errors={errorFor("number")}
    />
    <Field
      label="Expiry month"
      name="exp_month"
      autoComplete="cc-exp-month"
      inputMode="numeric"
      placeholder="MM"
      value={card.exp_month}
      onChange={(e) => onCard({ ...card, exp_month: e.target.value })}
      errors={errorFor("exp_month")}
    />
    <Field
      label="Expiry year"
      name="exp_year"
      autoComplete="cc-exp-year"
      inputMode="numeric"
      placeholder="YYYY"
      value={card.exp_year}
      onChange={(e) => onCard({ ...card, exp_year: e.target.value })}
      errors={errorFor("exp_year")}
    />
    <Field
      label="CVC"
      name="cvc"
      autoComplete="cc-csc"
      inputMode="numeric"
      value={card.cvc}
      onChange={(e) => onCard({ ...card, cvc: e.target.value })}
      errors={errorFor("cvc")}
    />
  </div>
);

const Cards = () => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const methods = useQuery(trpc.paymentMethods.list.queryOptions());
  const intent = useMutation(trpc.paymentMethods.createSetupIntent.mutationOptions());
  const save = useMutation(trpc.paymentMethods.save.mutationOptions());
  const [card, setCard] = useState<CardDetails>({ number: "", exp_month: "", exp_year: "", cvc: "" });
  const [problem, setProblem] = useState<{ field: CardField | undefined; message: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState("");
  const stripeMount = useRef<HTMLFieldSetElement>(null);
  const stripeCard = useRef<{ stripe: Awaited<ReturnType<typeof stripeJs>>; card: StripeCardElement } | undefined>(
    undefined,
  );

  // With real keys the card fields are Stripe's own (an iframe): mounted once the intent names the key.
  useEffect(() => {
    const key = intent.data?.publishable_key;
    if (pageConfig.processor.kind !== "stripe" || !key || !stripeMount.current) return;
    let element: StripeCardElement | undefined;
    void stripeJs(key)
      .then((stripe) => {
        element = stripe.elements().create("card");
        if (stripeMount.current) element.mount(stripeMount.current);
        stripeCard.current = { stripe, card: element };
      })
      .catch((error: unknown) => setProblem({ field: undefined, message: messageOf(error) }));
    return () => element?.destroy();
  }, [intent.data?.publishable_key]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(undefined);
    setDone("");
    setBusy(true);
    try {
      // A fresh intent per attempt: a declined confirm leaves the old one needing a new card anyway.
      const setup = await intent.mutateAsync();
      const processor = pageConfig.processor;
      let paymentMethod: string;
      if (processor.kind === "emulator") paymentMethod = await confirmCardWithEmulator(processor.path, setup, card);
      else if (stripeCard.current)
        paymentMethod = await confirmCardWithStripe(stripeCard.current.stripe, stripeCard.current.card, setup);
      else throw new ProcessorError("Enter the card in the field above, then save again.", undefined);
      const saved = await save.mutateAsync({ id: paymentMethod });
      setCard({ number: "", exp_month: "", exp_year: "", cvc: "" });
      setDone(`Saved ${saved.brand} ending in ${saved.last4}`);
      await queryClient.invalidateQueries({ queryKey: trpc.paymentMethods.list.queryKey() });
      await queryClient.invalidateQueries({ queryKey: trpc.invoices.list.queryKey() });
    } catch (error) {
      setProblem({ field: error instanceof ProcessorError ? error.field : undefined, message: messageOf(error) });
    } finally {
      setBusy(false);
    }
  };
  const errorFor = (field: CardField) => (problem?.field === field ? [problem.message] : undefined);
  const list = methods.data ?? [];
  return (
    <section className="card" aria-labelledby="cards-title">
      <h2 id="cards-title">Cards</h2>
      <QueryState isPending={methods.isPending} error={methods.error} what="cards" />
      {methods.data && list.length === 0 ? <p>No card on file.</p> : null}
      {list.length > 0 ? <SavedCards list={list} /> : null}
      <form onSubmit={submit} aria-labelledby="add-card-title" className="subform" noValidate>
        <h3 id="add-card-title">Add a card</h3>
        <p className="hint">
          {pageConfig.processor.kind === "emulator"
            ? "Development: the card goes to the built-in Stripe emulator (test numbers such as 4242 4242 4242 4242)."
            : "The card goes straight to Stripe; this system never sees its number."}
        </p>
        {pageConfig.processor.kind === "emulator" ? (
          <EmulatorCardFields card={card} onCard={setCard} errorFor={errorFor} />
        ) : (
          <div className="field">
            {intent.data ? (
              <fieldset ref={stripeMount} className="stripe-card" aria-label="Card details" />
            ) : (
              <button type="button" onClick={() => intent.mutate()} disabled={intent.isPending}>
                Enter a card
              </button>
            )}
          </div>
        )}
        <FormError message={problem && !problem.field ? problem.message : undefined} />
        <button type="submit" disabled={busy}>
          Save card
        </button>{" "}
        <span role="status">{done}</span>
      </form>
    </section>
  );
};

const Invoices = () => {
  const trpc = useTRPC();
  const invoices = useQuery(trpc.invoices.list.queryOptions());
  const list = invoices.data ?? [];
  return (
    <section className="card" aria-labelledby="invoices-title">
      <h2 id="invoices-title">Invoices</h2>
      <QueryState isPending={invoices.isPending} error={invoices.error} what="invoices" />
      {invoices.data && list.length === 0 ? <p>No invoices yet.</p> : null}
      {list.length > 0 ? (
        <table aria-label="Invoices">
          <thead>
            <tr>
              <th scope="col">Invoice</th>
              <th scope="col">Period</th>
              <th scope="col">Total</th>
              <th scope="col">Status</th>
              <th scope="col">PDF</th>
            </tr>
          </thead>
          <tbody>
            {list.map((invoice) => (
              <tr key={invoice.id}>
                <td>{invoice.number ?? "Draft"}</td>
                <td>
                  {invoice.period_start} – {invoice.period_end}
                </td>
                <td>
                  {invoice.currency_symbol}
                  {invoice.total.toFixed(2)}
                </td>
                <td>{invoice.status}</td>
                <td>
                  {invoice.invoice_pdf ? (
                    <a href={invoice.invoice_pdf} target="_blank" rel="noreferrer noopener">
                      PDF of {invoice.number ?? "draft"}
                    </a>
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
  );
};
