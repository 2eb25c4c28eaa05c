import { z } from "zod";
import { queryLimit, successEnvelope } from "./common.schema.ts";
import { formatIsoUtc, isKnownTimeZone } from "../rules/date-format.ts";
import { isCanonicalIpv4 } from "../rules/ipv4-rules.ts";
import {
  breaksTextRule,
  findTextRuleViolation,
  stringError,
  TEXT_RULE_MESSAGE,
  text,
  textRule,
} from "../rules/text-rules.ts";

/** docs/api.md "Router". Unknown values are null (never reported) or "never" for `last_seen`. */
export const ZRouter = z
  .object({
    id: z.string().meta({ description: "v4 UUID." }),
    name: z.string().meta({ description: "The metadata's `name` (set at enrollment or by PATCH); empty when unset." }),
    identity: z.string(),
    serial_number: z.string().meta({ description: "For virtual (cloud-hosted) instances, the software id." }),
    software_version: z.string(),
    software_id: z.string(),
    has_pulse: z.boolean().meta({ description: "Online (true) or offline, from the heartbeat check-in scheduler." }),
    uptime: z
      .string()
      .nullable()
      .meta({ description: 'Human text such as "3 days, 14 hours, 5 minutes"; null until reported.' }),
    last_seen: z
      .string()
      .meta({ description: 'Human text such as "2 minutes ago"; "never" before the first heartbeat.' }),
    last_seen_from: z.string().nullable().meta({ description: "Peer IP address of the latest heartbeat." }),
    hardwareboard: z.boolean(),
    model: z.string(),
    board_name: z.string(),
    last_seen_at: z.string().nullable().meta({ description: "YYYY-MM-DD HH:MM:SS (UTC)." }),
    created_at: z.string().meta({ description: "YYYY-MM-DD HH:MM:SS (UTC)." }),
    tags: z
      .array(z.string())
      .meta({ description: "Set with PATCH /api/routers/{id}; used by alert rules and maintenance windows." }),
    cpu_load: z.number().nullable().meta({ description: "Latest reported CPU load, percent; null: never reported." }),
    memory_used_percent: z
      .number()
      .nullable()
      .meta({ description: "Latest memory used, percent; null: never reported." }),
    temperature: z.number().nullable().meta({ description: "Latest temperature, degrees C; null: never reported." }),
  })
  .meta({ id: "Router" });
export type TRouter = z.infer<typeof ZRouter>;

/** docs/api.md "Router Metadata": a free-form key/value store with these known keys. */
export const ZRouterMetadata = z
  .object({
    name: z.string().optional(),
    timezone: z.string().optional(),
    boardname: z.string().optional(),
    model: z.string().optional(),
    hardwareboard: z.boolean().optional(),
    banner_img: z.string().optional(),
    thumbnail_img: z.string().optional(),
    slug: z.string().optional(),
    last_seen_from: z.string().optional(),
    lat: z.number().optional(),
    lng: z.number().optional(),
    tunnel_ip: z.string().optional(),
    tunnel_status: z.enum(["pending", "up", "down"]).optional().meta({
      description:
        "TUNNEL_MODE=wireguard: up while the hub's last handshake with the router is under 3 minutes old, pending before its key is bound.",
    }),
    tunnel_handshake_at: z
      .string()
      .nullable()
      .optional()
      .meta({ description: "TUNNEL_MODE=wireguard: the hub's last handshake, ISO 8601 +00:00; null before one." }),
  })
  .catchall(z.unknown())
  .meta({ id: "RouterMetadata" });
export type TRouterMetadata = z.infer<typeof ZRouterMetadata>;

/** docs/api.md "Metric (hourly)". */
export const ZMetric = z
  .object({
    date: z.string().meta({ description: "The hour, ISO 8601 with offset: 2026-11-21T13:00:00+00:00." }),
    minutes_down: z.number(),
    percentage_down: z.number(),
  })
  .meta({ id: "Metric" });
export type TMetric = z.infer<typeof ZMetric>;

/** docs/api.md "Fault". */
export const ZFault = z
  .object({
    id: z.string(),
    rid: z.string().meta({ description: "Id of the affected router." }),
    message: z.string(),
    severity: z.string(),
    type: z.string(),
    cause: z.string().meta({ description: "Unknown while ongoing." }),
    created_at: z.string().meta({ description: "ISO 8601 with offset." }),
    resolved_at: z.string().nullable(),
    duration: z.number().int().nullable().meta({ description: "Whole seconds; null while ongoing." }),
    status: z.enum(["ongoing", "completed"]),
    maintenance: z
      .boolean()
      .optional()
      .meta({ description: "true when the fault opened inside a maintenance window covering the router." }),
  })
  .meta({ id: "Fault" });
export type TFault = z.infer<typeof ZFault>;

/** Path parameter of every router endpoint. Malformed ids answer 404 like unknown ones. */
/**
 * docs/api.md "Routers and heartbeats" writes some router paths with `{id}` and docs/api.md with `{router_id}`; tRPC inputs are
 * the path parameters as fields, so either name is accepted and normalized to `router_id`.
 */
const routerIdAlias = (value: unknown): unknown => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (record.router_id !== undefined || typeof record.id !== "string") return value;
  const { id, ...rest } = record;
  return { ...rest, router_id: id };
};

/** A router id as sent: any text under the text rule; one that is not a UUID simply matches nothing (404). */
const routerId = textRule(z.string({ error: "must be a string" }));

export const ZRouterIdInput = z.preprocess(routerIdAlias, z.object({ router_id: routerId }));
export type TRouterIdInput = z.infer<typeof ZRouterIdInput>;

/** docs/api.md "Listing a fleet": the bounds of `GET /api/routers`; exported so tests probe the edges. */
export const ROUTER_LIST_LIMITS = { min: 1, max: 500, query: 100, cursor: 500 } as const;

/** The answer of GET /api/routers: `next_cursor` only when `limit` was given (null on the last page). */
export const ZRouterList = successEnvelope(z.array(ZRouter))
  .extend({
    next_cursor: z
      .string()
      .nullable()
      .optional()
      .meta({ description: "With `limit`: pass as ?cursor= for the next page; null on the last one." }),
  })
  .meta({ id: "RouterList" });
export type TRouterList = z.infer<typeof ZRouterList>;

/** routers.counts (tRPC): the team's routers, online and offline. */
export const ZRouterCounts = z.object({ total: z.number().int(), online: z.number().int(), offline: z.number().int() });
export type TRouterCounts = z.infer<typeof ZRouterCounts>;

/** docs/api.md "Limits" for routers; exported so tests probe the exact edges. */
export const ROUTER_LIMITS = {
  name: 100,
  /** Faults returned by GET /faults. */
  faults: 100,
  /** Complete UTC hours returned by GET /metrics. */
  metricHours: 24,
  /** Free-form metadata: at most this many user keys ... */
  metadataKeys: 50,
  /** ... each key at most this long ... */
  metadataKeyLength: 64,
  /** ... each value at most this many bytes of JSON ... */
  metadataValueBytes: 2_048,
  /** ... and all user keys together at most this many bytes of JSON. */
  metadataTotalBytes: 16_384,
  url: 2_048,
  /** Tags of one router (docs/api.md "Routers": PATCH /api/routers/{id}) ... */
  tags: 20,
  /** ... each 1..40 characters under the text rule. */
  tagLength: 40,
} as const;

/** One router tag (also a filter value of `GET /api/routers?tag=`, alert rules and maintenance windows). */
export const ZRouterTag = text({ min: 1, max: ROUTER_LIMITS.tagLength, error: stringError });

/** A router's whole tag list: replaced, never merged; duplicates collapse. */
export const ZRouterTags = z
  .array(ZRouterTag, { error: "must be an array of strings" })
  .max(ROUTER_LIMITS.tags, { error: `must hold at most ${ROUTER_LIMITS.tags} tags` });

/** The body of `PATCH /api/routers/{id}`: the fields of the router itself (metadata has its own PATCH). */
export const ZUpdateRouterBody = z.object({
  tags: ZRouterTags.optional(),
  team_id: textRule(z.string({ error: stringError }).max(100))
    .optional()
    .meta({ description: "Moves the router to this team of its organization (a credential not bound to a team)." }),
});

export const ZUpdateRouterInput = z.preprocess(routerIdAlias, ZUpdateRouterBody.extend({ router_id: routerId }));
export type TUpdateRouterInput = z.infer<typeof ZUpdateRouterInput>;

/** POST /api/routers. */
export const ZEnrollRouterInput = z.object({
  name: textRule(
    z
      .string({ error: "must be a string" })
      .max(ROUTER_LIMITS.name, { error: `must be at most ${ROUTER_LIMITS.name} characters` }),
  ).optional(),
  tunnel_ip: z
    .string({ error: "must be a string" })
    .refine(isCanonicalIpv4, { error: "must be a canonical dotted-quad IPv4 address" })
    .optional()
    .meta({
      description:
        "The router's management tunnel address, for an operator who runs the tunnel; it must lie inside TUNNEL_NETWORK and be free. Omitted: the system assigns one.",
    }),
});
export type TEnrollRouterInput = z.infer<typeof ZEnrollRouterInput>;

/** docs/routeros.md "Adoption": what an operator pastes into the router, and the one-time URL behind it. */
export const ZAdoption = z
  .object({
    command: z.string().meta({
      description:
        "One line to paste into a RouterOS 7 terminal: fetches the adoption script from `url` and imports it.",
    }),
    url: z.string().meta({
      description:
        "The adoption script (text/plain). No bearer header: the URL is the credential. Valid until the first heartbeat made with the token it carries or until `expires_at`; then 410.",
    }),
    expires_at: z.string().meta({ description: "ISO 8601 with +00:00; one hour after it was issued." }),
  })
  .meta({ id: "Adoption" });
export type TAdoption = z.infer<typeof ZAdoption>;

export const ZEnrolledRouter = z
  .object({
    router: ZRouter,
    heartbeat_token: z.string().meta({ description: "Shown once; the service keeps only its hash." }),
    tunnel_ip: z.string().meta({
      description: "The router's assigned management tunnel address (also the metadata's tunnel_ip).",
    }),
    adoption: ZAdoption,
  })
  .meta({ id: "EnrolledRouter" });
export type TEnrolledRouter = z.infer<typeof ZEnrolledRouter>;

/** Keys the router reports or the service derives; users cannot set them. */
export const READ_ONLY_METADATA_KEYS: ReadonlySet<string> = new Set([
  "boardname",
  "model",
  "hardwareboard",
  "slug",
  "last_seen_from",
  "tunnel_ip",
  "tunnel_status",
  "tunnel_handshake_at",
]);

/**
 * docs/api.md "Router Metadata": the management tunnel's state from the binding, the hub's last
 * handshake and the router's last answer at its tunnel address through the tunnel. A handshake
 * alone only proves that someone holds the bound key: both must be under 3 minutes old.
 */
export const tunnelStatus = (
  bound: boolean,
  handshakeAt: Date | null,
  answeredAt: Date | null,
  now: Date,
): "pending" | "up" | "down" => {
  if (!bound) return "pending";
  const recent = (at: Date | null) => at !== null && now.getTime() - at.getTime() < 180_000;
  return recent(handshakeAt) && recent(answeredAt) ? "up" : "down";
};

/**
 * GET /api/routers (docs/api.md "Listing a fleet"): without `limit` the whole (filtered, sorted)
 * list; with it one page and `next_cursor`. Query strings arrive as text, so `limit` is coerced.
 */
export const ZListRoutersInput = z
  .object({
    limit: queryLimit(ROUTER_LIST_LIMITS).optional(),
    cursor: textRule(
      z
        .string({ error: "must be a next_cursor from a previous page" })
        .max(ROUTER_LIST_LIMITS.cursor, { error: "must be a next_cursor from a previous page" }),
    ).optional(),
    q: textRule(
      z
        .string({ error: "must be a string" })
        .max(ROUTER_LIST_LIMITS.query, { error: `must be at most ${ROUTER_LIST_LIMITS.query} characters` }),
    )
      .optional()
      .meta({
        description: "Case-insensitive substring of identity, name, serial number, model or last-seen address.",
      }),
    status: z.enum(["online", "offline"], { error: "must be online or offline" }).optional(),
    tag: ZRouterTag.optional().meta({ description: "Only the routers that carry this tag." }),
    sort: z
      .enum(["name", "last_seen", "cpu", "memory", "temperature"], {
        error: "must be name, last_seen, cpu, memory or temperature",
      })
      .optional()
      .meta({
        description:
          "name (default): A to Z, case-insensitive; last_seen: most recently seen first, never seen last; cpu, memory, temperature: highest latest value first, never reported last.",
      }),
  })
  .optional();
export type TListRoutersInput = z.infer<typeof ZListRoutersInput>;

const METADATA_KEY = /^[A-Za-z0-9_.:-]+$/;

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
};

const encoder = new TextEncoder();
const jsonBytes = (value: unknown): number => encoder.encode(JSON.stringify(value) ?? "").length;

/** Validation of one user key; returns an error message or null. `null` values remove a key. */
const metadataValueError = (key: string, value: unknown): string | null => {
  // The tunnel address is the system's to assign (docs/api.md "Routers and heartbeats"), the rest the router's to report.
  if (key === "tunnel_ip") return "is assigned by the system at enrollment and cannot be set";
  if (READ_ONLY_METADATA_KEYS.has(key)) return "is reported by the router and cannot be set";
  switch (key) {
    case "name":
      if (typeof value !== "string") return "must be a string";
      return value.length > ROUTER_LIMITS.name ? `must be at most ${ROUTER_LIMITS.name} characters` : null;
    case "timezone":
      if (value === null) return null;
      if (typeof value !== "string" || value.length > 64 || !isKnownTimeZone(value)) {
        return "must be an IANA time zone name such as Europe/Berlin";
      }
      return null;
    case "lat":
    case "lng": {
      if (value === null) return null;
      const limit = key === "lat" ? 90 : 180;
      if (typeof value !== "number" || !Number.isFinite(value)) return "must be a number";
      return value < -limit || value > limit ? `must be between -${limit} and ${limit}` : null;
    }
    case "banner_img":
    case "thumbnail_img":
      if (value === null) return null;
      if (typeof value !== "string" || value.length > ROUTER_LIMITS.url || !isHttpUrl(value)) {
        return `must be an http or https URL of at most ${ROUTER_LIMITS.url} characters`;
      }
      return null;
    default:
      if (key.length > ROUTER_LIMITS.metadataKeyLength || !METADATA_KEY.test(key)) {
        return `is not a valid key: use at most ${ROUTER_LIMITS.metadataKeyLength} letters, digits, _ . : -`;
      }
      if (value === undefined) return "must be a JSON value";
      return jsonBytes(value) > ROUTER_LIMITS.metadataValueBytes
        ? `must be at most ${ROUTER_LIMITS.metadataValueBytes} bytes of JSON`
        : null;
  }
};

/**
 * PATCH /api/routers/{router_id}/metadata: the keys to merge. Known keys are validated (docs/api.md
 * "Router Metadata"), others are free-form but bounded; `null` removes a key.
 */
export const ZUpdateRouterMetadataInput = z.preprocess(
  routerIdAlias,
  z
    .object({ router_id: routerId })
    .catchall(z.unknown())
    .superRefine((input, ctx) => {
      const keys = Object.keys(input).filter((k) => k !== "router_id");
      // The text rule first, over keys and every string inside values (docs/api.md "Errors").
      let broken = false;
      for (const key of keys) {
        const found = breaksTextRule(key) ? [key] : findTextRuleViolation(input[key], [key])?.split(".");
        if (found === undefined) continue;
        ctx.addIssue({ code: "custom", path: found, message: TEXT_RULE_MESSAGE });
        broken = true;
      }
      if (broken) return;
      if (keys.length > ROUTER_LIMITS.metadataKeys) {
        ctx.addIssue({
          code: "custom",
          path: ["body"],
          message: `must have at most ${ROUTER_LIMITS.metadataKeys} keys`,
        });
        return;
      }
      for (const key of keys) {
        const message = metadataValueError(key, input[key]);
        if (message) ctx.addIssue({ code: "custom", path: [key], message });
      }
    }),
);

export type TUpdateRouterMetadataInput = z.infer<typeof ZUpdateRouterMetadataInput>;

const nullableUrl = z
  .url({ protocol: /^https?$/ })
  .max(ROUTER_LIMITS.url)
  .nullable()
  .optional();

/**
 * The body of that PATCH as /openapi.json describes it (the validator above also accepts the path
 * parameter as a field, which a JSON Schema of the body cannot say).
 */
export const ZRouterMetadataPatchBody = z
  .looseObject({
    name: z.string().max(ROUTER_LIMITS.name).optional(),
    timezone: z.string().max(64).nullable().optional().meta({ description: "IANA time zone name; null removes it." }),
    lat: z.number().min(-90).max(90).nullable().optional(),
    lng: z.number().min(-180).max(180).nullable().optional(),
    banner_img: nullableUrl,
    thumbnail_img: nullableUrl,
  })
  .meta({
    description: `Keys to merge; null removes a key. Other keys are free-form: at most ${ROUTER_LIMITS.metadataKeys} keys of at most ${ROUTER_LIMITS.metadataKeyLength} letters, digits, _ . : -, each value at most ${ROUTER_LIMITS.metadataValueBytes} bytes of JSON. Keys the router reports are read-only.`,
  });

/** Size of a merged user metadata object, checked against ROUTER_LIMITS after merging. */
export const metadataBytes = jsonBytes;

/** What `routers.onStatus` pushes: has_pulse and fault changes of the token's team. */
export const ZRouterStatusEvent = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("pulse"),
      router_id: z.string(),
      team_id: z.string(),
      has_pulse: z.boolean(),
      at: z.string().meta({ description: "ISO 8601 with offset." }),
    }),
    z.object({ type: z.literal("fault"), router_id: z.string(), team_id: z.string(), fault: ZFault }),
    z.object({ type: z.literal("removed"), router_id: z.string(), team_id: z.string() }),
    // Internal (never pushed to subscribers): a router's WireGuard binding was made or cleared;
    // the hub re-reads the bindings (docs/routeros.md "The management tunnel").
    z.object({ type: z.literal("tunnel_binding"), router_id: z.string(), team_id: z.string() }),
  ])
  .meta({ id: "RouterStatusEvent" });
export type TRouterStatusEvent = z.infer<typeof ZRouterStatusEvent>;
export type TRouterPulseEvent = Extract<TRouterStatusEvent, { type: "pulse" }>;

/** A router's has_pulse changed at `at` (a heartbeat resumed it, or the sweeper found it silent). */
export const pulseEvent = (p: {
  routerId: string;
  teamId: string;
  hasPulse: boolean;
  at: Date;
}): TRouterPulseEvent => ({
  type: "pulse",
  router_id: p.routerId,
  team_id: p.teamId,
  has_pulse: p.hasPulse,
  at: formatIsoUtc(p.at),
});

/** The fields of a stored fault that docs/api.md "Fault" shows. */
export interface FaultFields {
  id: string;
  routerId: string;
  type: string;
  severity: string;
  message: string;
  cause: string;
  status: "ongoing" | "completed";
  createdAt: Date;
  resolvedAt: Date | null;
  durationSeconds: number | null;
}

/** Stored fault -> docs/api.md "Fault", the same for the API's answers and the status feed. */
export const toFaultResponse = (fault: FaultFields): TFault => ({
  id: fault.id,
  rid: fault.routerId,
  message: fault.message,
  severity: fault.severity,
  type: fault.type,
  cause: fault.cause,
  created_at: formatIsoUtc(fault.createdAt),
  resolved_at: fault.resolvedAt ? formatIsoUtc(fault.resolvedAt) : null,
  duration: fault.durationSeconds,
  status: fault.status,
});
