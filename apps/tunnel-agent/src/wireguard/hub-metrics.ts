import { Counter, Gauge } from "prom-client";

/** The hub's metrics (docs/operations.md "Metrics and probes"): a failing peer set is alarmed, never silent. */
const applies = new Counter({
  name: "fleet_wireguard_peer_applies_total",
  help: "Batches of WireGuard peer changes sent to the hub's interface, by result (ok, failed; failed ones are retried).",
  labelNames: ["result"] as const,
});
const ok = applies.labels({ result: "ok" });
const failed = applies.labels({ result: "failed" });

const peers = new Gauge({
  name: "fleet_wireguard_peers",
  help: "Peers the hub's interface should hold: the routers with a bound WireGuard key.",
});

export const countHubApply = (success: boolean): void => (success ? ok : failed).inc();
export const setHubPeers = (count: number): void => peers.set(count);
