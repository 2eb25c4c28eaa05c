import {
  MemoryStatusFeed,
  type StatusFeed,
  type TFeedSignal,
  type TRouterStatusEvent,
  ZRouterStatusEvent,
} from "@fleet/shared";
import pg from "pg";
import type { Database } from "./database.ts";

/** The PostgreSQL channel status events travel on between processes. */
export const STATUS_CHANNEL = "fleet_router_status";
/** The channel that tells every heartbeat daemon a router's token was replaced (payload: JSON array of router ids). */
export const TOKEN_CHANNEL = "fleet_router_tokens";
/** The channel of fleet change signals (payload: JSON `{"k": <TFeedSignal>, "i": [items]}`). */
export const SIGNAL_CHANNEL = "fleet_signals";
// NOTIFY payloads must stay under 8000 bytes; events are packed into arrays below this.
const MAX_PAYLOAD_BYTES = 7_500;
const RECONNECT_MS = 1_000;

export interface StatusFeedHandle {
  feed: StatusFeed;
  /** Drops this holder's reference; the last one closes the LISTEN connection. */
  release(): Promise<void>;
}

interface Shared {
  feed: MemoryStatusFeed | PostgresStatusFeed;
  refs: number;
}

const registry = new WeakMap<Database, Promise<Shared>>();

/**
 * The status feed of a database, shared by every app in the process that uses the same Database
 * (the all-in-one's API and daemon hear each other). PGlite lives in one process, so an in-memory
 * feed is enough there; PostgreSQL uses LISTEN/NOTIFY so separate processes hear each other.
 */
export const acquireStatusFeed = async (
  db: Database,
  onError: (error: unknown) => void = () => {},
): Promise<StatusFeedHandle> => {
  let shared = registry.get(db);
  if (!shared) {
    shared = (async () => {
      if (db.driver !== "postgresql") return { feed: new MemoryStatusFeed(), refs: 0 };
      const url = String(db.orm.config.get("clientUrl"));
      const feed = new PostgresStatusFeed(db, url, onError);
      await feed.start();
      return { feed, refs: 0 };
    })();
    registry.set(db, shared);
  }
  const entry = await shared;
  entry.refs += 1;
  let released = false;
  return {
    feed: entry.feed,
    release: async () => {
      if (released) return;
      released = true;
      entry.refs -= 1;
      if (entry.refs === 0) {
        registry.delete(db);
        if (entry.feed instanceof PostgresStatusFeed) await entry.feed.stop();
      }
    },
  };
};

/** Packs events into NOTIFY-sized JSON arrays. */
export const packEvents = (events: readonly TRouterStatusEvent[], maxBytes = MAX_PAYLOAD_BYTES): string[] => {
  const payloads: string[] = [];
  let batch: string[] = [];
  let size = 2;
  for (const event of events) {
    const json = JSON.stringify(event);
    if (batch.length > 0 && size + json.length + 1 > maxBytes) {
      payloads.push(`[${batch.join(",")}]`);
      batch = [];
      size = 2;
    }
    batch.push(json);
    size += json.length + 1;
  }
  if (batch.length > 0) payloads.push(`[${batch.join(",")}]`);
  return payloads;
};

class PostgresStatusFeed implements StatusFeed {
  readonly #db: Database;
  readonly #url: string;
  readonly #onError: (error: unknown) => void;
  readonly #local = new MemoryStatusFeed();
  #client: pg.Client | undefined;
  #stopped = false;
  #retry: NodeJS.Timeout | undefined;

  constructor(db: Database, url: string, onError: (error: unknown) => void) {
    this.#db = db;
    this.#url = url;
    this.#onError = onError;
  }

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url });
    client.on("error", (error) => {
      this.#onError(error);
      this.#reconnect(client);
    });
    client.on("end", () => this.#reconnect(client));
    client.on("notification", (message) => {
      if (!message.payload) return;
      if (message.channel === STATUS_CHANNEL) this.#local.deliver(parsePayload(message.payload));
      else if (message.channel === TOKEN_CHANNEL) this.#local.deliverTokenReplaced(parseRouterIds(message.payload));
      else if (message.channel === SIGNAL_CHANNEL) {
        const signal = parseSignal(message.payload);
        if (signal) this.#local.deliverSignal(signal.kind, signal.items);
      }
    });
    await client.connect();
    await client.query(`listen ${STATUS_CHANNEL}; listen ${TOKEN_CHANNEL}; listen ${SIGNAL_CHANNEL}`);
    this.#client = client;
  }

  #reconnect(client: pg.Client): void {
    if (this.#stopped || this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => {});
    const attempt = () => {
      if (this.#stopped) return;
      this.start().catch((error) => {
        this.#onError(error);
        this.#retry = setTimeout(attempt, RECONNECT_MS);
        this.#retry.unref();
      });
    };
    this.#retry = setTimeout(attempt, RECONNECT_MS);
    this.#retry.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async publish(events: readonly TRouterStatusEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.#db.query("select pg_notify($1, p) from unnest($2::text[]) as p", [STATUS_CHANNEL, packEvents(events)]);
  }

  subscribe(listener: (event: TRouterStatusEvent) => void): () => void {
    return this.#local.subscribe(listener);
  }

  async publishTokenReplaced(routerIds: readonly string[]): Promise<void> {
    if (routerIds.length === 0) return;
    // Router ids are uuids: a few hundred fit one NOTIFY payload.
    const payloads: string[] = [];
    for (let i = 0; i < routerIds.length; i += 150) payloads.push(JSON.stringify(routerIds.slice(i, i + 150)));
    await this.#db.query("select pg_notify($1, p) from unnest($2::text[]) as p", [TOKEN_CHANNEL, payloads]);
  }

  onTokenReplaced(listener: (routerId: string) => void): () => void {
    return this.#local.onTokenReplaced(listener);
  }

  async signal(kind: TFeedSignal, items: readonly string[]): Promise<void> {
    if (items.length === 0) return;
    // Items are router ids (with a time): a hundred fit one NOTIFY payload.
    const payloads: string[] = [];
    for (let i = 0; i < items.length; i += 100) payloads.push(JSON.stringify({ k: kind, i: items.slice(i, i + 100) }));
    await this.#db.query("select pg_notify($1, p) from unnest($2::text[]) as p", [SIGNAL_CHANNEL, payloads]);
  }

  onSignal(kind: TFeedSignal, listener: (item: string) => void): () => void {
    return this.#local.onSignal(kind, listener);
  }
}

const SIGNALS: ReadonlySet<string> = new Set<TFeedSignal>(["change.awaiting", "router.beat"]);

const parseSignal = (payload: string): { kind: TFeedSignal; items: string[] } | null => {
  try {
    const parsed = JSON.parse(payload) as { k?: unknown; i?: unknown };
    if (typeof parsed.k !== "string" || !SIGNALS.has(parsed.k) || !Array.isArray(parsed.i)) return null;
    return { kind: parsed.k as TFeedSignal, items: parsed.i.filter((x): x is string => typeof x === "string") };
  } catch {
    return null;
  }
};

const parseRouterIds = (payload: string): string[] => {
  try {
    const parsed: unknown = JSON.parse(payload);
    return Array.isArray(parsed) ? parsed.filter((id): id is string => typeof id === "string") : [];
  } catch {
    return [];
  }
};

const parsePayload = (payload: string): TRouterStatusEvent[] => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const events: TRouterStatusEvent[] = [];
  for (const item of parsed) {
    const result = ZRouterStatusEvent.safeParse(item);
    if (result.success) events.push(result.data);
  }
  return events;
};
