import type { THealthMeasure } from "@fleet/shared";

const LABELS: Record<THealthMeasure, { name: string; unit: string }> = {
  cpu: { name: "CPU load", unit: " %" },
  memory: { name: "Memory used", unit: " %" },
  disk: { name: "Disk used", unit: " %" },
  temperature: { name: "Temperature", unit: " C" },
  ping_loss: { name: "Ping loss", unit: " %" },
};

/** How faults and alert messages name a measure and its unit (docs/api.md "Health thresholds"). */
export const resourceLabel = (measure: string): { name: string; unit: string } =>
  LABELS[measure as THealthMeasure] ?? { name: measure, unit: "" };
