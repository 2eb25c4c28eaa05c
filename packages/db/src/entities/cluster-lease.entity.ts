import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/**
 * A named lease one process of the cluster holds until `expiresAt` (renewing it keeps it). The
 * metrics that count state of the whole cluster are exported only by the holder of their lease,
 * so a sum over every scraped process counts them once (docs/operations.md "Metrics").
 */
export const ClusterLease = defineEntity({
  name: "ClusterLease",
  tableName: "cluster_leases",
  properties: {
    name: p.string().length(100).primary(),
    /** Which process holds it (host, pid and a random part). */
    holder: p.string().length(200),
    expiresAt: p.datetime(),
  },
});
export type TClusterLease = InferEntity<typeof ClusterLease>;
