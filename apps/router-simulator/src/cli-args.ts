import { parseArgs as parseArgv } from "node:util";

/** `npm run simulate -- --routers N [...]` (docs/routeros.md "Simulator"), parsed and checked. */
export interface SimulatorArgs {
  /** `--help`: print the usage and exit 0 (nothing else is checked then). */
  help: boolean;
  routers: number;
  heartbeatUrl: string;
  apiUrl: string;
  tokenFile: string | undefined;
  email: string;
  silent: number;
  flap: number;
  reboot: number;
  /** Connect from each router's tunnel_ip (loopback only), so last_seen_from shows it. */
  bindTunnelIp: boolean;
  quiet: boolean;
  /** Adopt like a real router: run the adoption command, then heartbeats over HTTP from its scheduler. */
  adopt: boolean;
  /** `/system reboot` and update installs keep an adopted router offline this long. */
  rebootSeconds: number;
  /** K adopted routers lose their management tunnel after the next change script (until a backup is loaded). */
  breakTunnelOnChange: number;
  /** `--overload K`, `--overheat K`, `--lossy K`: the first K adopted routers report CPU > 95 %, > 80 C, half their pings lost. */
  overload: number;
  overheat: number;
  lossy: number;
}

/** The user of the README's first session: the simulator's routers land in that user's organization. */
export const DEFAULT_SIMULATOR_EMAIL = "you@example.com";

export const USAGE = `Usage: npm run simulate -- --routers N [options]
       npm run simulate -- --help

  --routers N            simulated routers to run (1-100000)
  --adopt                enroll and adopt each router like a real one: run its adoption command
                         through the simulated RouterOS, then heartbeat over HTTP from its scheduler;
                         adopted routers are kept in the state directory and come back on the next run
  --email E              dev-login email of the fleet owner (default ${DEFAULT_SIMULATOR_EMAIL}, the user
                         of the README's first session; that user's billing account must exist)
  --heartbeat-url URL    heartbeat daemon (default ws://HOST:HEARTBEAT_PORT/v1/heartbeat, i.e. ws://127.0.0.1:3001/v1/heartbeat)
  --api-url URL          API used to enroll routers (default http://HOST:PORT; with only --heartbeat-url
                         given, that URL's host and PORT)
  --token-file F         reuse routers enrolled earlier (JSON); new ones are added to it
  --silent K             K routers go silent after their first heartbeat (faults open)
  --flap K               K routers alternate online/offline, long enough to open faults
  --reboot K             K routers go away and come back with a reset uptime (cause: reboot)
  --reboot-seconds S     an adopted router's reboot (or firmware install) keeps it offline S seconds
                         (default 10)
  --break-tunnel-on-change K
                         K adopted routers lose their management tunnel after the next change script
                         they run, until a backup is loaded (the guard of a fleet change)
  --overload K           with --adopt: K routers report a CPU load above 95 %
  --overheat K           with --adopt: K routers report a temperature above 80 C
  --lossy K              with --adopt: K routers lose half of their heartbeat pings
  --no-bind              do not connect from each router's loopback tunnel_ip
  --quiet                no periodic status lines
  --help                 this text

Each router uses the tunnel_ip the system assigned at enrollment (in development inside
127.64.0.0/10, a loopback network) and gets a unique identity (sim-<first 8 hex digits of its id>).
The simulator reads PORT, HEARTBEAT_PORT, HOST, DATA_DIR, TUNNEL_SSH_PORT and TUNNEL_SSH_USER
from the environment, as the system does, so both agree without flags.`;

export class ArgsError extends Error {}

const count = (name: string, raw: string | undefined, max: number): number => {
  if (raw === undefined || !/^\d+$/.test(raw) || Number(raw) > max)
    throw new ArgsError(`${name} must be an integer between 0 and ${max}`);
  return Number(raw);
};

const url = (name: string, raw: string | undefined, protocols: string[]): string => {
  try {
    const parsed = new URL(raw ?? "");
    if (protocols.includes(parsed.protocol)) return parsed.toString();
  } catch {
    // Reported below.
  }
  throw new ArgsError(`${name} must be a ${protocols.join(" or ")} URL`);
};

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  routers: { type: "string" },
  "heartbeat-url": { type: "string" },
  "api-url": { type: "string" },
  "token-file": { type: "string" },
  email: { type: "string" },
  silent: { type: "string" },
  flap: { type: "string" },
  reboot: { type: "string" },
  "no-bind": { type: "boolean" },
  quiet: { type: "boolean" },
  adopt: { type: "boolean" },
  "reboot-seconds": { type: "string" },
  "break-tunnel-on-change": { type: "string" },
  overload: { type: "string" },
  overheat: { type: "string" },
  lossy: { type: "string" },
} as const;

/** node:util's parse errors, in the words the rest of the simulator uses. */
const tokenize = (argv: readonly string[]) => {
  try {
    return parseArgv({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    const option = /'(-[^' ]+)/.exec(message)?.[1];
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new ArgsError(`unknown option ${option ?? message}`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") throw new ArgsError(`${option ?? "an option"} needs a value`);
    if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
      throw new ArgsError(`unexpected argument ${/'([^']+)'/.exec(message)?.[1] ?? ""} (options start with --)`);
    }
    throw new ArgsError(message);
  }
};

export const parseArgs = (
  argv: readonly string[],
  defaults: { heartbeatUrl: string; apiUrl: string } = {
    heartbeatUrl: "ws://127.0.0.1:3001/v1/heartbeat",
    apiUrl: "http://127.0.0.1:3000",
  },
): SimulatorArgs => {
  const v = tokenize(argv);
  const args: SimulatorArgs = {
    help: v.help === true,
    routers: 0,
    heartbeatUrl: defaults.heartbeatUrl,
    apiUrl: defaults.apiUrl,
    tokenFile: undefined,
    email: DEFAULT_SIMULATOR_EMAIL,
    silent: 0,
    flap: 0,
    reboot: 0,
    bindTunnelIp: v["no-bind"] !== true,
    quiet: v.quiet === true,
    adopt: v.adopt === true,
    rebootSeconds: 10,
    breakTunnelOnChange: 0,
    overload: 0,
    overheat: 0,
    lossy: 0,
  };
  if (args.help) return args;
  if (v.routers !== undefined) args.routers = count("--routers", v.routers, 100_000);
  if (v["heartbeat-url"] !== undefined) args.heartbeatUrl = url("--heartbeat-url", v["heartbeat-url"], ["ws:", "wss:"]);
  if (v["api-url"] !== undefined) args.apiUrl = url("--api-url", v["api-url"], ["http:", "https:"]).replace(/\/+$/, "");
  if (v["token-file"] !== undefined) {
    if (!v["token-file"]) throw new ArgsError("--token-file needs a file name");
    args.tokenFile = v["token-file"];
  }
  if (v.email !== undefined) {
    if (!/^[^@\s]+@[^@\s]+$/.test(v.email)) throw new ArgsError("--email must be an email address");
    args.email = v.email;
  }
  if (v.silent !== undefined) args.silent = count("--silent", v.silent, 100_000);
  if (v.flap !== undefined) args.flap = count("--flap", v.flap, 100_000);
  if (v.reboot !== undefined) args.reboot = count("--reboot", v.reboot, 100_000);
  if (v["reboot-seconds"] !== undefined) args.rebootSeconds = count("--reboot-seconds", v["reboot-seconds"], 3600);
  if (v["break-tunnel-on-change"] !== undefined) {
    args.breakTunnelOnChange = count("--break-tunnel-on-change", v["break-tunnel-on-change"], 100_000);
    if (!args.adopt) throw new ArgsError("--break-tunnel-on-change needs --adopt (routers that run change scripts)");
  }
  if (args.breakTunnelOnChange > args.routers) throw new ArgsError("--break-tunnel-on-change cannot exceed --routers");
  if (v.overload !== undefined) args.overload = count("--overload", v.overload, 100_000);
  if (v.overheat !== undefined) args.overheat = count("--overheat", v.overheat, 100_000);
  if (v.lossy !== undefined) args.lossy = count("--lossy", v.lossy, 100_000);
  if (args.routers < 1) throw new ArgsError("--routers N is required (N >= 1)");
  if (!args.adopt && args.overload + args.overheat + args.lossy > 0) {
    // Health comes from the adoption script the simulated RouterOS runs (docs/routeros.md "Health").
    throw new ArgsError("--overload, --overheat and --lossy need --adopt: adopted routers report health");
  }
  for (const [name, k] of [
    ["--overload", args.overload],
    ["--overheat", args.overheat],
    ["--lossy", args.lossy],
  ] as const) {
    if (k > args.routers) throw new ArgsError(`${name} cannot exceed --routers`);
  }
  if (v["heartbeat-url"] !== undefined && v["api-url"] === undefined) {
    // The API runs beside the heartbeat daemon: same host, the API's port.
    const api = new URL(defaults.apiUrl);
    api.hostname = new URL(args.heartbeatUrl).hostname;
    api.protocol = args.heartbeatUrl.startsWith("wss:") ? "https:" : "http:";
    args.apiUrl = api.toString().replace(/\/+$/, "");
  }
  if (args.adopt && (args.tokenFile || args.silent + args.flap + args.reboot > 0)) {
    // Adopted routers keep their own state (the state directory), and behaviours are the WebSocket fleet's.
    throw new ArgsError("--adopt cannot be combined with --token-file, --silent, --flap or --reboot");
  }
  if (args.silent + args.flap + args.reboot > args.routers) {
    throw new ArgsError("--silent + --flap + --reboot cannot exceed --routers");
  }
  return args;
};
