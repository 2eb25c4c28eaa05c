import { z } from "zod";
import { changeTemplateProblems } from "../routeros/change-script.ts";
import { stringError, text } from "../rules/text-rules.ts";
import { queryCursor, queryLimit, successEnvelope } from "./common.schema.ts";
import { ZRouterTag } from "./router.schema.ts";

/** docs/api.md "Changes": every limit, probed by tests at n and n+1. */
export const CHANGE_LIMITS = {
  name: 100,
  /** Bytes of a script (UTF-8). */
  scriptBytes: 64 * 1024,
  firmwareVersion: 64,
  canary: { min: 1, max: 50, default: 1 },
  waveSize: { min: 1, max: 500, default: 10 },
  waveIntervalSeconds: { min: 0, max: 86_400, default: 60 },
  maxFailures: { min: 0, max: 1000, default: 0 },
  guardSeconds: { min: 60, max: 3600, default: 300 },
  selectorRouterIds: 2000,
  selectorTags: 20,
  page: { min: 1, max: 200, default: 50 },
} as const;

export const CHANGE_KINDS = ["script", "firmware"] as const;
export const FIRMWARE_CHANNELS = ["stable", "long-term"] as const;
export const CHANGE_STATES = [
  "awaiting_approval",
  "scheduled",
  "running",
  "paused",
  "halted",
  "completed",
  "cancelled",
] as const;
export const CHANGE_ROUTER_STATES = [
  "pending",
  "running",
  "succeeded",
  "failed",
  "reverted",
  "skipped_offline",
  "cancelled",
] as const;

const between = (limits: { min: number; max: number }) => {
  const message = `must be an integer between ${limits.min} and ${limits.max}`;
  return (
    z
      .number({ error: message })
      .int({ error: message })
      .min(limits.min, { error: message })
      .max(limits.max, { error: message })
      // A pipe keeps trpc-to-openapi from coercing strings into numbers (see forward.schema.ts).
      .transform((value) => value)
  );
};

const anId = text({ min: 1, max: 100, error: stringError });
const encoder = new TextEncoder();

/** A date and time that exist: Date.parse rolls 2026-02-31 over to March and takes 24:00. */
const calendarValid = (v: string): boolean => {
  const [y = 0, m = 0, d = 0, h = 0, min = 0] = (v.match(/^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)/) ?? [])
    .slice(1)
    .map(Number);
  const day = new Date(Date.UTC(y, m - 1, d));
  return (
    y >= 1970 &&
    day.getUTCFullYear() === y &&
    day.getUTCMonth() === m - 1 &&
    day.getUTCDate() === d &&
    h < 24 &&
    min < 60
  );
};

/** A RouterOS version as a router prints it: `7.16.2`, `7.17rc3`, `7.18beta2`. */
const ROUTEROS_VERSION = /^\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:(?:rc|beta)\d{1,3})?$/;

const instant = z
  .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be an ISO 8601 date-time") })
  .max(40, { error: "must be an ISO 8601 date-time" })
  .refine(
    (v) =>
      /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:?\d\d)$/.test(v) &&
      !Number.isNaN(Date.parse(v)) &&
      calendarValid(v),
    { error: "must be an ISO 8601 date-time with an offset, such as 2026-12-01T22:00:00Z" },
  );

export const ZChangeSelector = z
  .object({
    router_ids: z
      .array(anId, { error: "must be an array of router ids" })
      .max(CHANGE_LIMITS.selectorRouterIds, { error: `must hold at most ${CHANGE_LIMITS.selectorRouterIds} ids` })
      .optional(),
    tags: z
      .array(ZRouterTag, { error: "must be an array of strings" })
      .max(CHANGE_LIMITS.selectorTags, { error: `must hold at most ${CHANGE_LIMITS.selectorTags} tags` })
      .optional(),
    team_id: anId.optional(),
  })
  .meta({
    id: "ChangeSelector",
    description:
      "Every condition given holds: one of the ids, any of the tags, the team (an empty list holds for no router). None given: every router.",
  });

export const ZChangeStrategy = z
  .object({
    canary: between(CHANGE_LIMITS.canary).optional(),
    wave_size: between(CHANGE_LIMITS.waveSize).optional(),
    wave_interval_seconds: between(CHANGE_LIMITS.waveIntervalSeconds).optional(),
    max_failures: between(CHANGE_LIMITS.maxFailures).optional(),
  })
  .meta({ id: "ChangeStrategy" });

export const ZCreateChangeInput = z
  .object({
    name: text({ min: 1, max: CHANGE_LIMITS.name, error: stringError }),
    kind: z.enum(CHANGE_KINDS, { error: 'must be "script" or "firmware"' }),
    script: text({ min: 1, multiline: true, error: stringError })
      .refine((v) => encoder.encode(v).length <= CHANGE_LIMITS.scriptBytes, {
        error: `must be at most ${CHANGE_LIMITS.scriptBytes} bytes`,
      })
      .optional(),
    firmware: z
      .object({
        channel: z.enum(FIRMWARE_CHANNELS, { error: 'must be "stable" or "long-term"' }),
        version: text({ min: 1, max: CHANGE_LIMITS.firmwareVersion, error: stringError })
          .refine((v) => ROUTEROS_VERSION.test(v), { error: "must be a RouterOS version such as 7.16.2 or 7.17rc3" })
          .optional(),
      })
      .optional(),
    routers: ZChangeSelector,
    strategy: ZChangeStrategy.optional(),
    guard_seconds: between(CHANGE_LIMITS.guardSeconds).optional(),
    requires_approval: z
      .boolean({ error: "must be true or false" })
      // A pipe keeps trpc-to-openapi from coercing ("false" would be true; see forward.schema.ts).
      .transform((value) => value)
      .optional(),
    start_at: instant.optional(),
  })
  .superRefine((input, ctx) => {
    if (input.kind === "script") {
      if (input.script === undefined) ctx.addIssue({ code: "custom", path: ["script"], message: "is required" });
      if (input.firmware !== undefined)
        ctx.addIssue({ code: "custom", path: ["firmware"], message: "must be left out of a script change" });
    }
    if (input.kind === "firmware") {
      if (input.firmware === undefined) ctx.addIssue({ code: "custom", path: ["firmware"], message: "is required" });
      if (input.script !== undefined)
        ctx.addIssue({ code: "custom", path: ["script"], message: "must be left out of a firmware change" });
    }
    for (const problem of input.script === undefined ? [] : changeTemplateProblems(input.script)) {
      ctx.addIssue({ code: "custom", path: ["script"], message: problem });
    }
  });
export type TCreateChangeInput = z.infer<typeof ZCreateChangeInput>;

export const ZChangeRouter = z
  .object({
    id: z.string(),
    router_id: z.string(),
    wave: z.number().int().meta({ description: "0: the canaries." }),
    position: z.number().int(),
    state: z.enum(CHANGE_ROUTER_STATES),
    phase: z.string().nullable().meta({ description: "The executor's current step." }),
    output: z.string().nullable(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: "ChangeRouter" });
export type TChangeRouter = z.infer<typeof ZChangeRouter>;

export const ZChange = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(CHANGE_KINDS),
    state: z.enum(CHANGE_STATES),
    script: z.string().nullable(),
    firmware: z.object({ channel: z.string(), version: z.string().nullable() }).nullable(),
    routers_selector: ZChangeSelector,
    strategy: z.object({
      canary: z.number().int(),
      wave_size: z.number().int(),
      wave_interval_seconds: z.number().int(),
      max_failures: z.number().int(),
    }),
    guard_seconds: z.number().int(),
    requires_approval: z.boolean(),
    start_at: z.string().nullable(),
    created_by: z.string().nullable().meta({ description: "The user (or API key) that made it." }),
    approved_by: z.string().nullable(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    counts: z.record(z.string(), z.number().int()).meta({ description: "Routers per state." }),
  })
  .meta({ id: "Change" });
export type TChange = z.infer<typeof ZChange>;

export const ZCreatedChange = ZChange.extend({ routers: z.array(ZChangeRouter) }).meta({ id: "CreatedChange" });
export type TCreatedChange = z.infer<typeof ZCreatedChange>;

export const ZChangeListQuery = z
  .object({
    limit: queryLimit(CHANGE_LIMITS.page).optional(),
    cursor: queryCursor().optional(),
  })
  // Every field is optional: a typed client may call it with no input at all.
  .optional();
export type TChangeListQuery = NonNullable<z.infer<typeof ZChangeListQuery>>;

export const ZChangePage = successEnvelope(z.array(ZChange))
  .extend({
    next_cursor: z.string().nullable().meta({ description: "Pass as ?cursor= for the next (older) page." }),
  })
  .meta({ id: "ChangePage" });
export type TChangePage = z.infer<typeof ZChangePage>;

export const ZChangePreviewQuery = z.object({
  id: anId,
  router_id: anId,
});

export const ZChangePreview = z
  .object({
    router_id: z.string(),
    script: z.string().nullable().meta({ description: "The script as this router would run it; null for firmware." }),
  })
  .meta({ id: "ChangePreview" });
export type TChangePreview = z.infer<typeof ZChangePreview>;
