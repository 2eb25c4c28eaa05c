import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { type ChartPoint, LineChart } from "../components/line-chart.tsx";
import { QueryState } from "../components/query-state.tsx";
import { useTRPC } from "../trpc.ts";

/** docs/console.md "Router": the health charts' ranges; a week or more reads the hourly rollups. */
export const HEALTH_RANGES = [
  { id: "24h", label: "Last 24 hours", ms: 86_400_000, step: "5m" },
  { id: "7d", label: "Last 7 days", ms: 7 * 86_400_000, step: "1h" },
  { id: "30d", label: "Last 30 days", ms: 30 * 86_400_000, step: "1h" },
] as const;
type RangeId = (typeof HEALTH_RANGES)[number]["id"];

/** Charts follow new samples: each minute, or every few seconds while a range has none yet (a new router). */
const refetchInterval = (query: { state: { data?: { data: readonly object[] } | undefined } }) =>
  (query.state.data?.data ?? []).some((row) =>
    Object.entries(row).some(([key, value]) => key !== "at" && key !== "name" && typeof value === "number"),
  )
    ? 60_000
    : 5_000;

/** Interfaces charted at most; the rest are listed by name. */
export const TRAFFIC_CHARTS_MAX = 8;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A range from a fixed start (so re-renders ask for the same series) up to now: the query leaves
 * `to` to the server, so each refetch brings the newest samples.
 */
const periodOf = (id: RangeId) => {
  const range = HEALTH_RANGES.find((r) => r.id === id) ?? HEALTH_RANGES[0];
  return { from: Math.floor((Date.now() - range.ms) / 60_000) * 60_000, step: range.step };
};

type Row = Record<string, unknown> & { at: string };
const num = (row: Row, key: string): number | null => {
  const v = row[key];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
};
const pointsOf = (rows: readonly Row[], key: string): ChartPoint[] =>
  rows.map((row) => ({
    at: Date.parse(row.at),
    value: num(row, key),
    ...(`min_${key}` in row ? { min: num(row, `min_${key}`), max: num(row, `max_${key}`) } : {}),
  }));

/**
 * docs/console.md "Router": CPU, memory, temperature, ping and traffic per interface over 24 hours,
 * 7 or 30 days, from `routers.resources`, `routers.interfaces` and `routers.traffic`.
 */
export const HealthSection = ({ routerId }: { routerId: string }) => {
  const trpc = useTRPC();
  const [range, setRange] = useState<RangeId>("24h");
  const [period, setPeriod] = useState(() => periodOf("24h"));
  const choose = (id: RangeId) => {
    setRange(id);
    setPeriod(periodOf(id));
  };
  const query = { router_id: routerId, from: iso(period.from), step: period.step };
  const to = Date.now();
  const resources = useQuery(
    trpc.routers.resources.queryOptions(query, { placeholderData: keepPreviousData, refetchInterval }),
  );
  const interfaces = useQuery(trpc.routers.interfaces.queryOptions({ router_id: routerId }, { refetchInterval }));
  const rows = (resources.data?.data ?? []) as readonly Row[];
  const names = (interfaces.data?.data ?? []).map((i) => i.name);
  const chart = (title: string, unit: string, key: string, fixedMax?: number) => (
    <LineChart
      title={title}
      unit={unit}
      series={[{ name: title, points: pointsOf(rows, key) }]}
      from={period.from}
      to={to}
      {...(fixedMax === undefined ? {} : { fixedMax })}
    />
  );
  return (
    <>
      <div className="toolbar">
        <div className="field inline">
          <label htmlFor="health-range">Range</label>
          <select id="health-range" value={range} onChange={(e) => choose(e.target.value as RangeId)}>
            {HEALTH_RANGES.map((r) => (
              <option key={r.id} value={r.id}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <QueryState isPending={resources.isPending} error={resources.error} what="health" />
      {resources.data && rows.length === 0 ? <p>No health samples in this range yet.</p> : null}
      {rows.length > 0 ? (
        <div className="charts">
          {chart("CPU load", "%", "cpu_load", 100)}
          {chart("Memory used", "%", "memory_used_percent", 100)}
          {chart("Temperature", "°C", "temperature")}
          <LineChart
            title="Ping"
            unit="%"
            series={[{ name: "Ping loss", points: pointsOf(rows, "ping_loss_percent") }]}
            from={period.from}
            to={to}
            fixedMax={100}
          />
          {chart("Ping round trip", "ms", "ping_rtt_ms")}
        </div>
      ) : null}
      <QueryState isPending={interfaces.isPending} error={interfaces.error} what="interfaces" />
      {names.length > 0 ? (
        <div className="charts">
          {names.slice(0, TRAFFIC_CHARTS_MAX).map((name) => (
            <TrafficChart key={name} routerId={routerId} name={name} period={period} />
          ))}
        </div>
      ) : null}
      {names.length > TRAFFIC_CHARTS_MAX ? <p>Not charted: {names.slice(TRAFFIC_CHARTS_MAX).join(", ")}.</p> : null}
    </>
  );
};

const TrafficChart = ({
  routerId,
  name,
  period,
}: {
  routerId: string;
  name: string;
  period: { from: number; step: "5m" | "1h" };
}) => {
  const trpc = useTRPC();
  const traffic = useQuery(
    trpc.routers.traffic.queryOptions(
      { router_id: routerId, name, from: iso(period.from), step: period.step },
      { placeholderData: keepPreviousData, refetchInterval },
    ),
  );
  const rows = (traffic.data?.data ?? []) as readonly Row[];
  const to = Date.now();
  return (
    <>
      <QueryState isPending={traffic.isPending} error={traffic.error} what={`traffic of ${name}`} />
      {traffic.data ? (
        <LineChart
          title={`Traffic on ${name}`}
          unit="bit/s"
          series={[
            { name: "Received", points: pointsOf(rows, "rx_bps") },
            { name: "Sent", points: pointsOf(rows, "tx_bps") },
          ]}
          from={period.from}
          to={to}
        />
      ) : null}
    </>
  );
};
