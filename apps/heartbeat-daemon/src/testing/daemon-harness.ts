import type { Database } from "@fleet/db";
import { ManualClock, systemClock } from "@fleet/shared";
import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import WebSocket from "ws";
import { type HeartbeatConfig, type HeartbeatTuning, loadHeartbeatConfig } from "../config.ts";
import { type RunningHeartbeat, startHeartbeat } from "../start-heartbeat.ts";

export interface DaemonHarnessOptions {
  intervalMs?: number;
  missedHeartbeats?: number;
  tuning?: Partial<HeartbeatTuning>;
  clock?: ManualClock | undefined;
  /** The system clock instead of a ManualClock (the harness's `clock` is then not the daemon's). */
  realClock?: boolean;
  /** Timers on (real flushes and sweeps); off by default so tests drive flush() and sweep(). */
  timers?: boolean;
  /** METRICS_TOKEN of the daemon. */
  metricsToken?: string;
  /** RESOURCE_SAMPLE_SECONDS of the daemon (default 300). */
  resourceSampleSeconds?: number;
  /** HEALTH_PING_TARGET of the daemon (default unset: any ping target is taken). */
  healthPingTarget?: string;
  /** Silent unless given (tests that read log lines pass a capturing one). */
  logger?: Logger;
}

export interface DaemonHarness {
  daemon: RunningHeartbeat;
  config: HeartbeatConfig;
  clock: ManualClock;
  close(): Promise<void>;
}

/** A heartbeat daemon on a random loopback port over `db`, on a ManualClock. */
export const startDaemonHarness = async (db: Database, options: DaemonHarnessOptions = {}): Promise<DaemonHarness> => {
  const config = loadHeartbeatConfig({
    HOST: "127.0.0.1",
    HEARTBEAT_PORT: "0",
    HEARTBEAT_INTERVAL_MS: String(options.intervalMs ?? 1_000),
    MISSED_HEARTBEATS: String(options.missedHeartbeats ?? 3),
    DATA_DIR: "memory",
    LOG_LEVEL: "silent",
    ...(options.metricsToken === undefined ? {} : { METRICS_TOKEN: options.metricsToken }),
    ...(options.resourceSampleSeconds === undefined
      ? {}
      : { RESOURCE_SAMPLE_SECONDS: String(options.resourceSampleSeconds) }),
    ...(options.healthPingTarget === undefined ? {} : { HEALTH_PING_TARGET: options.healthPingTarget }),
  });
  config.tuning = { ...config.tuning, ...options.tuning };
  const clock = options.clock ?? new ManualClock();
  const daemon = await startHeartbeat({
    config,
    db,
    logger: options.logger ?? pino({ level: "silent" }),
    clock: options.realClock ? systemClock : clock,
    timers: options.timers ?? false,
  });
  return { daemon, config, clock, close: () => daemon.close() };
};

/** A logger whose JSON lines a test can read (security events, poison rows). */
export const capturingLogger = (level = "info") => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level }, stream) };
};

/** A WebSocket router client that records every message and the close code. */
export interface TestSocket {
  ws: WebSocket;
  messages: unknown[];
  closed: Promise<{ code: number; reason: string }>;
  /** Resolves with the next message not yet taken. */
  next(): Promise<unknown>;
  send(frame: unknown): void;
  close(): Promise<void>;
}

export type ConnectResult = { ok: true; socket: TestSocket } | { ok: false; status: number; body: string };

export const connect = (wsUrl: string, token: string | undefined): Promise<ConnectResult> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    const messages: unknown[] = [];
    const waiters: Array<(m: unknown) => void> = [];
    let taken = 0;
    const closed = new Promise<{ code: number; reason: string }>((done) => {
      ws.on("close", (code, reason) => done({ code, reason: reason.toString() }));
    });
    ws.on("message", (data) => {
      const message = JSON.parse(data.toString());
      messages.push(message);
      const waiter = waiters.shift();
      if (waiter) {
        taken += 1;
        waiter(message);
      }
    });
    ws.on("error", () => {});
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ ok: false, status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    ws.once("open", () =>
      resolve({
        ok: true,
        socket: {
          ws,
          messages,
          closed,
          next: () =>
            new Promise((done) => {
              if (taken < messages.length) {
                done(messages[taken]);
                taken += 1;
              } else waiters.push(done);
            }),
          send: (frame) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
          close: async () => {
            if (ws.readyState === WebSocket.CLOSED) return;
            ws.close();
            await closed;
          },
        },
      }),
    );
  });

/** Connects and fails the test if the upgrade is refused. */
export const connectOk = async (wsUrl: string, token: string): Promise<TestSocket> => {
  const result = await connect(wsUrl, token);
  if (!result.ok) throw new Error(`upgrade refused: ${result.status} ${result.body}`);
  return result.socket;
};

/** POSTs a heartbeat over HTTP. */
export const postHeartbeat = async (baseUrl: string, token: string | undefined, body: string | object) => {
  const res = await fetch(`${baseUrl}/v1/heartbeat`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Tests look at the text.
  }
  return { status: res.status, body: parsed as Record<string, unknown> };
};
