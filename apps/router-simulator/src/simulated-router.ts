import { type THeartbeatFrame, ZHeartbeatAck } from "@fleet/shared";
import WebSocket from "ws";

/** How a simulated router behaves (docs/routeros.md "Simulator": some go silent, reboot, flap). */
export type RouterBehaviour = "steady" | "silent" | "flap" | "reboot";

/** Hardware a simulated router claims to be: a few real MikroTik models, CHR included. */
const MODELS = [
  { model: "RB5009UG+S+", board: "RB5009UG+S+", hardwareboard: true },
  { model: "CCR2004-16G-2S+", board: "CCR2004-16G-2S+", hardwareboard: true },
  { model: "C53UiG+5HPaxD2HPaxD", board: "hAP ax^3", hardwareboard: true },
  { model: "CHR", board: "CHR", hardwareboard: false },
] as const;

export interface SimulatedRouterOptions {
  index: number;
  routerId: string;
  token: string;
  heartbeatUrl: string;
  /** The router's management-tunnel address (a distinct 127.x address). */
  tunnelIp: string;
  /** Connect from `tunnelIp` (loopback heartbeat URLs only). */
  bindTunnelIp: boolean;
  behaviour: RouterBehaviour;
  /** `identity` in heartbeats; default `sim-0001`, ... by index. */
  identity?: string;
  /** Offline/online phases of flapping and rebooting routers, in heartbeat intervals. */
  phaseIntervals?: number;
}

export interface RouterStats {
  connects: number;
  acks: number;
  errors: number;
  /** The daemon refused the token (401): the router was deleted; it stops. */
  refused: boolean;
}

/**
 * One simulated router's heartbeat side: a WebSocket to the daemon, a heartbeat at the acked
 * interval, reconnects with backoff. The per-router object other parts hang off: the RouterOS
 * simulation (SSH on `tunnelIp`) is attached by the simulator's `onRouter` hook.
 */
export class SimulatedRouter {
  readonly routerId: string;
  readonly tunnelIp: string;
  readonly identity: string;
  readonly behaviour: RouterBehaviour;
  readonly stats: RouterStats = { connects: 0, acks: 0, errors: 0, refused: false };
  readonly #o: SimulatedRouterOptions;
  readonly #hardware: (typeof MODELS)[number];
  readonly #serial: string;
  #ws: WebSocket | undefined;
  #beat: NodeJS.Timeout | undefined;
  #phase: NodeJS.Timeout | undefined;
  #retry: NodeJS.Timeout | undefined;
  #backoffMs = 1_000;
  #intervalMs = 30_000;
  #bootedAt = Date.now() - Math.floor(Math.random() * 30 * 86_400_000);
  #online = false;
  #stopped = false;

  constructor(options: SimulatedRouterOptions) {
    this.#o = options;
    this.routerId = options.routerId;
    this.tunnelIp = options.tunnelIp;
    this.behaviour = options.behaviour;
    this.identity = options.identity ?? `sim-${String(options.index + 1).padStart(4, "0")}`;
    this.#hardware = MODELS[options.index % MODELS.length] ?? MODELS[0];
    this.#serial = options.routerId.replaceAll("-", "").slice(0, 12).toUpperCase();
  }

  get online(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  get intervalMs(): number {
    return this.#intervalMs;
  }

  start(): void {
    this.#online = true;
    this.#connect();
  }

  /** Power off: the socket goes, no heartbeats, no reconnects. */
  goOffline(): void {
    this.#online = false;
    clearTimeout(this.#beat);
    clearTimeout(this.#retry);
    this.#ws?.terminate();
    this.#ws = undefined;
  }

  /** Power on; `reboot` resets the uptime, which the daemon reads as a reboot. */
  goOnline(reboot = false): void {
    if (this.#stopped || this.#online) return;
    if (reboot) this.#bootedAt = Date.now();
    this.#online = true;
    this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#phase);
    this.goOffline();
  }

  frame(): THeartbeatFrame {
    return {
      type: "heartbeat",
      identity: this.identity,
      serial_number: this.#hardware.hardwareboard ? this.#serial : `CHR-${this.#serial}`,
      software_version: "7.16.2",
      software_id: `${this.#serial.slice(0, 4)}-${this.#serial.slice(4, 8)}`,
      model: this.#hardware.model,
      board_name: this.#hardware.board,
      hardwareboard: this.#hardware.hardwareboard,
      uptime: Math.floor((Date.now() - this.#bootedAt) / 1000),
      tunnel_ip: this.tunnelIp,
      metadata: { simulated: true, behaviour: this.behaviour },
    };
  }

  #connect(): void {
    if (this.#stopped || !this.#online) return;
    const url = new URL(this.#o.heartbeatUrl);
    const loopback = url.hostname === "localhost" || url.hostname.startsWith("127.");
    const ws = new WebSocket(this.#o.heartbeatUrl, {
      headers: { authorization: `Bearer ${this.#o.token}` },
      ...(this.#o.bindTunnelIp && loopback ? { localAddress: this.tunnelIp } : {}),
    });
    this.#ws = ws;
    ws.on("error", () => {
      this.stats.errors += 1;
    });
    ws.on("unexpected-response", (_req, res) => {
      res.resume();
      if (res.statusCode === 401) {
        this.stats.refused = true;
        this.stop();
      }
    });
    ws.on("open", () => {
      this.stats.connects += 1;
      this.#backoffMs = 1_000;
      this.#send();
    });
    ws.on("message", (data) => this.#onMessage(data.toString()));
    ws.on("close", () => {
      if (this.#ws !== ws) return;
      clearTimeout(this.#beat);
      this.#ws = undefined;
      if (!this.#online || this.#stopped) return;
      // Reconnect with jittered exponential backoff, as RouterOS scripts retrying would.
      const delay = this.#backoffMs * (0.5 + Math.random());
      this.#backoffMs = Math.min(this.#backoffMs * 2, 30_000);
      this.#retry = setTimeout(() => this.#connect(), delay);
      this.#retry.unref();
    });
  }

  #onMessage(text: string): void {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return;
    }
    const ack = ZHeartbeatAck.safeParse(json);
    if (!ack.success) {
      this.stats.errors += 1;
      return;
    }
    this.stats.acks += 1;
    const firstAck = this.stats.acks === 1;
    if (ack.data.interval_ms !== this.#intervalMs) {
      // The daemon sets the pace: the next heartbeat follows its interval, not the default.
      this.#intervalMs = ack.data.interval_ms;
      clearTimeout(this.#beat);
      this.#beat = setTimeout(() => this.#send(), this.#intervalMs);
      this.#beat.unref();
    }
    if (firstAck) this.#onFirstAck();
  }

  #send(): void {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify(this.frame()));
    clearTimeout(this.#beat);
    this.#beat = setTimeout(() => this.#send(), this.#intervalMs);
    this.#beat.unref();
  }

  /** Behaviours start once the router knows the daemon's interval. */
  #onFirstAck(): void {
    const phase = (this.#o.phaseIntervals ?? 12) * this.#intervalMs;
    const cycle = (offline: () => void, online: () => void) => {
      const step = (goingOffline: boolean) => {
        this.#phase = setTimeout(() => {
          if (this.#stopped) return;
          if (goingOffline) offline();
          else online();
          step(!goingOffline);
        }, phase);
        this.#phase.unref();
      };
      step(true);
    };
    switch (this.behaviour) {
      case "silent":
        this.goOffline();
        break;
      case "flap":
        cycle(
          () => this.goOffline(),
          () => this.goOnline(false),
        );
        break;
      case "reboot":
        cycle(
          () => this.goOffline(),
          () => this.goOnline(true),
        );
        break;
      default:
        break;
    }
  }
}
