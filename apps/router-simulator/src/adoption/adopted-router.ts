import http from "node:http";
import https from "node:https";
import {
  type DeviceSnapshot,
  type HttpRequest,
  type HttpResponse,
  RouterOsDevice,
} from "../routeros/script/routeros-device.ts";
import { INSTALLED_VERSION, type RouterOsSystemOptions } from "../routeros/script/routeros-device-system.ts";
import { type HealthBehaviour, healthSeed, SimulatedHealth } from "../routeros/health/simulated-health.ts";

/** Hardware an adopted router claims: a RouterBOARD and a CHR (no RouterBOARD, no serial number). */
const HARDWARE = [
  { model: "RB5009UG+S+", board: "RB5009UG+S+", routerboard: true },
  { model: "CCR2004-16G-2S+", board: "CCR2004-16G-2S+", routerboard: true },
  { model: "CHR", board: "CHR", routerboard: false },
] as const;

export interface AdoptedRouterOptions {
  index: number;
  routerId: string;
  /** The one-line adoption command from the enroll answer, pasted as an operator would. */
  adoptionCommand: string;
  /** The router's management-tunnel address (a distinct 127.x address in the simulator). */
  tunnelIp: string;
  /** Send HTTP from `tunnelIp` (loopback URLs only), so `last_seen_from` shows it. */
  bindTunnelIp: boolean;
  /** `/system identity`; default `sim-0001`, ... */
  identity?: string;
  /** `/system resource get version`; default 7.15.1 (no `:serialize` options yet). */
  version?: string;
  /** Home mode: forbid fetch or scheduler, as some units ship. */
  deviceMode?: { fetch: boolean; scheduler: boolean };
  /** `--netns`: applies the router's WireGuard tables to a real interface (RouterOsDeviceOptions.onTunnelChange). */
  onTunnelChange?: (device: RouterOsDevice) => Promise<void>;
  /** `--reboot-seconds`, `--break-tunnel-on-change` (routeros-device-system.ts). */
  system?: RouterOsSystemOptions;
  /** `--overload`, `--overheat`, `--lossy`: what this router's health pushes past the thresholds. */
  health?: HealthBehaviour;
}

export interface RecordedRequest extends HttpRequest {
  status: number;
}

/**
 * A simulated router adopted the way a real one is (docs/routeros.md "Simulator"): it runs the
 * adoption command through its RouterOS device (fetch, import, remove), and from then on its
 * scheduler runs the installed script, whose `/tool fetch` posts heartbeats over HTTP. Nothing of
 * the heartbeat is built here: the bytes on the wire are what the script makes.
 */
export class AdoptedRouter {
  readonly routerId: string;
  readonly tunnelIp: string;
  readonly device: RouterOsDevice;
  /** The latest requests `/tool fetch` made (bounded), for tests. */
  readonly requests: RecordedRequest[] = [];
  readonly stats = { requests: 0, ok: 0, failed: 0 };
  readonly #o: AdoptedRouterOptions;

  constructor(options: AdoptedRouterOptions) {
    this.#o = options;
    this.routerId = options.routerId;
    this.tunnelIp = options.tunnelIp;
    const hardware = HARDWARE[options.index % HARDWARE.length] ?? HARDWARE[0];
    // Real serials start with letters (HE708...); a digits-only one would be a float after :serialize.
    const serial = `HE${options.routerId.replaceAll("-", "").slice(0, 10).toUpperCase()}`;
    this.device = new RouterOsDevice({
      identity: options.identity ?? `sim-${String(options.index + 1).padStart(4, "0")}`,
      // A release behind the stable channel, so that a firmware change has something to install.
      version: options.version ?? `${INSTALLED_VERSION} (stable)`,
      boardName: hardware.board,
      model: hardware.model,
      routerboard: hardware.routerboard,
      serialNumber: serial,
      licenseId: `${serial.slice(0, 4)}-${serial.slice(4, 8)}`,
      bootedAt: Date.now() - (options.index % 7) * 86_400_000 - 3_723_000,
      ...(options.deviceMode ? { deviceMode: options.deviceMode } : {}),
      ...(options.onTunnelChange ? { onTunnelChange: options.onTunnelChange } : {}),
      ...(options.system ? { system: options.system } : {}),
      // Health drifts per router: the same router id gives the same values at the same time.
      health: new SimulatedHealth(healthSeed(options.routerId), hardware.routerboard, options.health ?? {}),
      http: (request) => this.#send(request),
    });
  }

  /** Pastes the adoption command into the terminal; throws what the terminal would print. */
  async adopt(): Promise<void> {
    await this.device.run(this.#o.adoptionCommand);
  }

  /**
   * Powers on with the configuration an earlier run saved: the scheduler's startup run sends a
   * heartbeat at once. Answers that heartbeat's HTTP status (401: the system no longer knows the
   * token), or undefined when none went out (the daemon unreachable, or nothing scheduled).
   */
  async resume(saved: DeviceSnapshot): Promise<number | undefined> {
    const before = this.stats.requests;
    await this.device.boot(saved);
    return this.stats.requests > before ? this.requests.at(-1)?.status : undefined;
  }

  /** The router powers off: its scheduler stops. */
  stop(): void {
    this.device.system.stop();
    this.device.stop();
  }

  /** Fleet changes over SSH run through the device's interpreter (routeros-device-system.ts). */
  readonly script = (text: string): Promise<string> => this.device.system.runRemote(text);

  /** False while rebooting or cut off the tunnel (`--break-tunnel-on-change`). */
  readonly reachable = (): boolean => this.device.system.reachable;

  /** docs/routeros.md "Simulator": SSH logins follow the router's own users and keys. */
  readonly authorize = (username: string, publicKey: Buffer, address: string): boolean =>
    this.device.authorizes(username, publicKey, address);

  /** docs/routeros.md "Offboarding": the agent's removals over SSH reach this router's own tables. */
  readonly configuration = {
    remove: (menu: string, target: Parameters<RouterOsDevice["removeWhere"]>[1]): string =>
      this.device.removeWhere(menu, target),
    exportLines: (): string[] => this.device.system.exportLines(),
  };

  async #send(request: HttpRequest): Promise<HttpResponse> {
    const url = new URL(request.url);
    const loopback = url.hostname === "localhost" || url.hostname.startsWith("127.");
    const body = request.body === undefined ? undefined : Buffer.from(request.body, "utf8");
    const headers: Record<string, string | number> = {};
    for (const [name, value] of request.headers) headers[name] = value;
    if (body) headers["Content-Length"] = body.length;
    this.stats.requests += 1;
    try {
      const response = await new Promise<HttpResponse>((resolve, reject) => {
        const req = (url.protocol === "https:" ? https : http).request(
          url,
          {
            method: request.method,
            headers,
            agent: false,
            ...(this.#o.bindTunnelIp && loopback ? { localAddress: this.tunnelIp } : {}),
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      if (response.status >= 200 && response.status < 300) this.stats.ok += 1;
      else this.stats.failed += 1;
      this.requests.push({ ...request, status: response.status });
      if (this.requests.length > 20) this.requests.shift();
      return response;
    } catch (error) {
      this.stats.failed += 1;
      throw error;
    }
  }
}
