import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useState } from "react";
import { AvailabilityChart } from "../components/availability-chart.tsx";
import { DowntimeChart } from "../components/downtime-chart.tsx";
import { Field, FormError } from "../components/field.tsx";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { Link } from "../navigation.tsx";
import { fieldErrors, httpStatus, messageOf, useTRPC } from "../trpc.ts";
import { routerLabel, StatusBadge } from "./fleet-page.tsx";
import { AccessSection } from "./router-access.tsx";
import { BackupsSection } from "./router-backups.tsx";
import { ForwardsSection } from "./router-forwards.tsx";
import { HealthSection } from "./router-health.tsx";

/**
 * The router page is a list of sections, each its own component with its own queries
 * (docs/console.md "Router"); a new one is a further entry here, nothing else on the page changes.
 */
const SECTIONS: ReadonlyArray<{ id: string; title: string; render: (routerId: string) => ReactNode }> = [
  { id: "metadata", title: "Metadata", render: (id) => <MetadataSection routerId={id} /> },
  { id: "tags", title: "Tags", render: (id) => <TagsSection routerId={id} /> },
  { id: "oem", title: "Hardware", render: (id) => <OemSection routerId={id} /> },
  { id: "health", title: "Health", render: (id) => <HealthSection routerId={id} /> },
  { id: "downtime", title: "Downtime, last 24 hours", render: (id) => <MetricsSection routerId={id} /> },
  { id: "availability", title: "Availability, last 30 days", render: (id) => <AvailabilitySection routerId={id} /> },
  { id: "faults", title: "Faults", render: (id) => <FaultsSection routerId={id} /> },
  { id: "forwards", title: "Port forwards", render: (id) => <ForwardsSection routerId={id} /> },
  { id: "access", title: "Temporary access", render: (id) => <AccessSection routerId={id} /> },
  { id: "backups", title: "Configuration backups", render: (id) => <BackupsSection routerId={id} /> },
];

export const RouterPage = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const answer = useQuery(trpc.routers.get.queryOptions({ router_id: routerId }));
  const router = answer.data?.data;
  usePageTitle(router ? routerLabel(router) : "Router");
  if (httpStatus(answer.error) === 404) {
    return (
      <section aria-labelledby="router-missing">
        <h1 id="router-missing">Router not found</h1>
        <p>
          It was removed, or it belongs to another team. <Link to="/">Back to the fleet</Link>
        </p>
      </section>
    );
  }
  return (
    <article aria-labelledby="router-title">
      <p className="crumbs">
        <Link to="/">Fleet</Link> /
      </p>
      <div className="page-head start">
        <h1 id="router-title">{router ? routerLabel(router) : "Router"}</h1>
        {router ? <StatusBadge online={router.has_pulse} /> : null}
      </div>
      <QueryState isPending={answer.isPending} error={answer.error} what="the router" />
      {router ? (
        <dl className="facts">
          <dt>Name</dt>
          <dd>{router.name || "—"}</dd>
          <dt>Model</dt>
          <dd>{router.model || "—"}</dd>
          <dt>RouterOS</dt>
          <dd>{router.software_version || "—"}</dd>
          <dt>Serial number</dt>
          <dd>{router.serial_number || "—"}</dd>
          <dt>Uptime</dt>
          <dd>{router.uptime ?? "—"}</dd>
          <dt>Last seen</dt>
          <dd>
            {router.last_seen}
            {router.last_seen_from ? ` from ${router.last_seen_from}` : ""}
          </dd>
          <dt>Enrolled</dt>
          <dd>{router.created_at} UTC</dd>
        </dl>
      ) : null}
      {SECTIONS.map((section) => (
        <section key={section.id} aria-labelledby={`section-${section.id}`} className="card">
          <h2 id={`section-${section.id}`}>{section.title}</h2>
          {section.render(routerId)}
        </section>
      ))}
    </article>
  );
};

const MetadataSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const metadata = useQuery(trpc.routers.metadata.queryOptions({ router_id: routerId }));
  const entries = Object.entries(metadata.data?.data ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return (
    <>
      <QueryState isPending={metadata.isPending} error={metadata.error} what="metadata" />
      {entries.length > 0 ? (
        <dl className="facts">
          {entries.map(([key, value]) => (
            <div key={key} className="fact">
              <dt>{key}</dt>
              <dd>{typeof value === "string" ? value : JSON.stringify(value)}</dd>
            </div>
          ))}
        </dl>
      ) : null}
    </>
  );
};

/** docs/console.md "Router": tags (alert rules and maintenance windows select by them). */
const TagsSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.routers.list.queryOptions());
  const current = list.data?.data.find((r) => r.id === routerId)?.tags ?? [];
  const [text, setText] = useState<string | undefined>(undefined);
  const update = useMutation(
    trpc.routers.update.mutationOptions({
      onSuccess: () => {
        setText(undefined);
        return queryClient.invalidateQueries({ queryKey: trpc.routers.list.queryKey() });
      },
    }),
  );
  const errors = fieldErrors(update.error);
  const tagErrors = Object.entries(errors)
    .filter(([key]) => key === "tags" || key.startsWith("tags."))
    .flatMap(([, messages]) => messages);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const tags = (text ?? current.join(", "))
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    update.mutate({ router_id: routerId, tags });
  };
  return (
    <form onSubmit={submit} aria-label="Router tags" noValidate>
      <Field
        label="Tags (comma-separated)"
        value={text ?? current.join(", ")}
        onChange={(e) => setText(e.target.value)}
        errors={tagErrors.length > 0 ? tagErrors : undefined}
      />
      <FormError message={update.error && tagErrors.length === 0 ? messageOf(update.error) : undefined} />
      <button type="submit" disabled={update.isPending}>
        Save tags
      </button>
    </form>
  );
};

const OemSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const oem = useQuery(trpc.routers.oem.queryOptions({ router_id: routerId }));
  // 404: the model is not (yet) reported or not in the catalogue; that is not an error of the page.
  if (httpStatus(oem.error) === 404) return <p>No manufacturer data for this model yet.</p>;
  const info = oem.data?.data;
  return (
    <>
      <QueryState isPending={oem.isPending} error={oem.error} what="hardware data" />
      {info ? (
        <div className="oem">
          <p>
            <strong>{info.name}</strong> ({info.model}) · {info.category}
            {info.archived ? " · discontinued" : ""}
          </p>
          {info.short_description ? <p>{info.short_description}</p> : null}
          <dl className="facts">
            <dt>CPU</dt>
            <dd>
              {[info.cpu, info.cpu_core_count ? `${info.cpu_core_count} cores` : null, info.cpu_nominal_frequency]
                .filter(Boolean)
                .join(", ") || "—"}
            </dd>
            <dt>Memory</dt>
            <dd>{info.ram ?? "—"}</dd>
            <dt>Storage</dt>
            <dd>{[info.storage_size, info.storage_type].filter(Boolean).join(" ") || "—"}</dd>
            <dt>RouterOS licence level</dt>
            <dd>{info.router_os_license ?? "—"}</dd>
            <dt>Ports</dt>
            <dd>{info.ports.length}</dd>
            <dt>List price</dt>
            <dd>{info.price ? `$${info.price}` : "—"}</dd>
          </dl>
        </div>
      ) : null}
    </>
  );
};

const MetricsSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const metrics = useQuery(trpc.routers.metrics.queryOptions({ router_id: routerId }));
  return (
    <>
      <QueryState isPending={metrics.isPending} error={metrics.error} what="downtime" />
      {metrics.data ? <DowntimeChart hours={metrics.data.data} /> : null}
    </>
  );
};

const AvailabilitySection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  // The server's default range: the last 30 UTC days, one row a day.
  const availability = useQuery(trpc.availability.router.queryOptions({ router_id: routerId }));
  return (
    <>
      <QueryState isPending={availability.isPending} error={availability.error} what="availability" />
      {availability.data ? <AvailabilityChart days={availability.data.data} /> : null}
    </>
  );
};

const FaultsSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const faults = useQuery(trpc.routers.faults.queryOptions({ router_id: routerId }));
  const list = faults.data?.data ?? [];
  return (
    <>
      <QueryState isPending={faults.isPending} error={faults.error} what="faults" />
      {faults.data && list.length === 0 ? <p>No faults.</p> : null}
      {list.length > 0 ? (
        <table aria-label="Faults">
          <thead>
            <tr>
              <th scope="col">Fault</th>
              <th scope="col">Status</th>
              <th scope="col">Cause</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {list.map((fault) => (
              <tr key={fault.id}>
                <td>{fault.message}</td>
                <td>
                  <span className={fault.status === "ongoing" ? "badge offline" : "badge"}>{fault.status}</span>
                </td>
                <td>{fault.cause}</td>
                <td>{new Date(fault.created_at).toLocaleString()}</td>
                <td>{fault.duration === null ? "ongoing" : `${fault.duration} s`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
};
