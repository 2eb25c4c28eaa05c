import { z } from "zod";
import { textRule } from "../rules/text-rules.ts";

/** docs/api.md "Health thresholds": the measures watched, the limits tests probe at the edges. */
export const HEALTH_MEASURES = ["cpu", "memory", "disk", "temperature", "ping_loss"] as const;
export type THealthMeasure = (typeof HEALTH_MEASURES)[number];

export const HEALTH_THRESHOLD_LIMITS = {
  forSeconds: { min: 0, max: 86_400 },
  percent: { min: 0, max: 100 },
  /** Degrees C: what RouterBOARD sensors can report, with room on both sides. */
  temperature: { min: -40, max: 150 },
} as const;

export interface THealthThreshold {
  above: number;
  for_seconds: number;
}

/** What is watched when neither the organization nor the router says otherwise (CONTRACT 20). */
export const DEFAULT_HEALTH_THRESHOLDS: Record<THealthMeasure, THealthThreshold | null> = {
  cpu: { above: 90, for_seconds: 600 },
  memory: { above: 90, for_seconds: 600 },
  disk: { above: 95, for_seconds: 0 },
  temperature: { above: 75, for_seconds: 300 },
  ping_loss: { above: 20, for_seconds: 300 },
};

const thresholdOf = (range: { min: number; max: number }) => {
  const aboveError = `must be a number between ${range.min} and ${range.max}`;
  const { min, max } = HEALTH_THRESHOLD_LIMITS.forSeconds;
  const forError = `must be an integer between ${min} and ${max}`;
  return z
    .strictObject(
      {
        above: z
          .number({ error: (issue) => (issue.input === undefined ? "is required" : aboveError) })
          .min(range.min, { error: aboveError })
          .max(range.max, { error: aboveError })
          // A pipe keeps trpc-to-openapi from coercing strings into numbers (see forward.schema.ts).
          .transform((value) => value),
        for_seconds: z
          .number({ error: (issue) => (issue.input === undefined ? "is required" : forError) })
          .int({ error: forError })
          .min(min, { error: forError })
          .max(max, { error: forError })
          .transform((value) => value),
      },
      { error: 'must be an object {"above", "for_seconds"} or null' },
    )
    .nullable();
};

const percent = HEALTH_THRESHOLD_LIMITS.percent;
const thresholdFields = {
  cpu: thresholdOf(percent),
  memory: thresholdOf(percent),
  disk: thresholdOf(percent),
  temperature: thresholdOf(HEALTH_THRESHOLD_LIMITS.temperature),
  ping_loss: thresholdOf(percent),
};

/** A PUT body: only the measures it names are replaced; null stops watching one; other keys are ignored. */
export const ZHealthThresholdsBody = z.object(
  {
    cpu: thresholdFields.cpu.optional(),
    memory: thresholdFields.memory.optional(),
    disk: thresholdFields.disk.optional(),
    temperature: thresholdFields.temperature.optional(),
    ping_loss: thresholdFields.ping_loss.optional(),
  },
  { error: `must be an object with some of ${HEALTH_MEASURES.join(", ")}` },
);
export type THealthThresholdsBody = z.infer<typeof ZHealthThresholdsBody>;

/** The router form of the body: its id from the path (`{id}` or `{router_id}`). */
const routerIdAlias = (value: unknown): unknown => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (record.router_id !== undefined || typeof record.id !== "string") return value;
  const { id, ...rest } = record;
  return { ...rest, router_id: id };
};
export const ZRouterHealthThresholdsInput = z.preprocess(
  routerIdAlias,
  ZHealthThresholdsBody.extend({ router_id: textRule(z.string({ error: "must be a string" })) }),
);
export type TRouterHealthThresholdsInput = z.infer<typeof ZRouterHealthThresholdsInput>;

const ZThresholdOut = z
  .object({ above: z.number(), for_seconds: z.number().int() })
  .nullable()
  .meta({ description: "null: not watched." });

/** Every measure, as it applies (docs/api.md "Health thresholds"). */
export const ZHealthThresholds = z
  .object({
    cpu: ZThresholdOut,
    memory: ZThresholdOut,
    disk: ZThresholdOut,
    temperature: ZThresholdOut,
    ping_loss: ZThresholdOut,
  })
  .meta({ id: "HealthThresholds" });
export type THealthThresholds = z.infer<typeof ZHealthThresholds>;

export const ZRouterHealthThresholds = ZHealthThresholds.extend({
  overridden: z
    .array(z.enum(HEALTH_MEASURES))
    .meta({ description: "The measures this router sets itself; the others follow its organization." }),
}).meta({ id: "RouterHealthThresholds" });
export type TRouterHealthThresholds = z.infer<typeof ZRouterHealthThresholds>;
