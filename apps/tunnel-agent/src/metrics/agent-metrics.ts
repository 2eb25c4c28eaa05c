import { Counter } from "prom-client";

/**
 * The tunnel agent's metrics (docs/operations.md "Metrics and probes"). Bytes are added once per
 * finished connection (the sockets' own counters), not per chunk, so the relayed byte path does no
 * extra work. Job metrics come from the job engine.
 */
const connections = new Counter({
  name: "fleet_relay_connections_total",
  help: "Entry-point connections by result: accepted (inside allow_only_cidr) or denied.",
  labelNames: ["result"] as const,
});
const accepted = connections.labels({ result: "accepted" });
const denied = connections.labels({ result: "denied" });

const bytes = new Counter({
  name: "fleet_relay_bytes_total",
  help: "Bytes relayed by finished entry-point connections: in (from clients), out (to clients).",
  labelNames: ["direction"] as const,
});
const bytesIn = bytes.labels({ direction: "in" });
const bytesOut = bytes.labels({ direction: "out" });

export const countRelayConnection = (ok: boolean): void => (ok ? accepted : denied).inc();

export const countRelayBytes = (fromClient: number, toClient: number): void => {
  bytesIn.inc(fromClient);
  bytesOut.inc(toClient);
};
