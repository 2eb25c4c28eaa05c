/** `npm run simulate -- --routers N [...]` (docs/routeros.md "Simulator"), parsed and checked. */
export interface SimulatorArgs {
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
}

export const USAGE = `Usage: npm run simulate -- --routers N [options]

  --routers N            simulated routers to run (1-100000)
  --heartbeat-url URL    heartbeat daemon (default ws://HOST:HEARTBEAT_PORT/v1/heartbeat, i.e. ws://127.0.0.1:3001/v1/heartbeat)
  --api-url URL          API used to enroll routers (default http://HOST:PORT; with only --heartbeat-url
                         given, that URL's host and PORT)
  --token-file F         reuse routers enrolled earlier (JSON); new ones are added to it
  --email E              dev-login email of the simulated fleet owner (default simulator@fleet.example)
  --silent K             K routers go silent after their first heartbeat (faults open)
  --flap K               K routers alternate online/offline, long enough to open faults
  --reboot K             K routers go away and come back with a reset uptime (cause: reboot)
  --adopt                enroll and adopt each router like a real one: run its adoption command
                         through the simulated RouterOS, then heartbeat over HTTP from its scheduler
  --no-bind              do not connect from each router's 127.x tunnel_ip
  --quiet                no periodic status lines`;

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

export const parseArgs = (
  argv: readonly string[],
  defaults: { heartbeatUrl: string; apiUrl: string } = {
    heartbeatUrl: "ws://127.0.0.1:3001/v1/heartbeat",
    apiUrl: "http://127.0.0.1:3000",
  },
): SimulatorArgs => {
  const args: SimulatorArgs = {
    routers: 0,
    heartbeatUrl: defaults.heartbeatUrl,
    apiUrl: defaults.apiUrl,
    tokenFile: undefined,
    email: "simulator@fleet.example",
    silent: 0,
    flap: 0,
    reboot: 0,
    bindTunnelIp: true,
    quiet: false,
    adopt: false,
  };
  let sawRouters = false;
  let sawHeartbeatUrl = false;
  let sawApiUrl = false;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      i += 1;
      return argv[i];
    };
    switch (flag) {
      case "--routers":
        args.routers = count("--routers", value(), 100_000);
        sawRouters = true;
        break;
      case "--heartbeat-url":
        args.heartbeatUrl = url("--heartbeat-url", value(), ["ws:", "wss:"]);
        sawHeartbeatUrl = true;
        break;
      case "--api-url":
        args.apiUrl = url("--api-url", value(), ["http:", "https:"]).replace(/\/+$/, "");
        sawApiUrl = true;
        break;
      case "--token-file":
        args.tokenFile = value();
        if (!args.tokenFile) throw new ArgsError("--token-file needs a file name");
        break;
      case "--email":
        args.email = value() ?? "";
        if (!/^[^@\s]+@[^@\s]+$/.test(args.email)) throw new ArgsError("--email must be an email address");
        break;
      case "--silent":
        args.silent = count("--silent", value(), 100_000);
        break;
      case "--flap":
        args.flap = count("--flap", value(), 100_000);
        break;
      case "--reboot":
        args.reboot = count("--reboot", value(), 100_000);
        break;
      case "--no-bind":
        args.bindTunnelIp = false;
        break;
      case "--quiet":
        args.quiet = true;
        break;
      case "--adopt":
        args.adopt = true;
        break;
      default:
        throw new ArgsError(`unknown option ${flag}`);
    }
  }
  if (!sawRouters || args.routers < 1) throw new ArgsError("--routers N is required (N >= 1)");
  if (sawHeartbeatUrl && !sawApiUrl) {
    // The API runs beside the heartbeat daemon: same host, the API's port.
    const api = new URL(defaults.apiUrl);
    api.hostname = new URL(args.heartbeatUrl).hostname;
    api.protocol = args.heartbeatUrl.startsWith("wss:") ? "https:" : "http:";
    args.apiUrl = api.toString().replace(/\/+$/, "");
  }
  if (args.adopt && (args.tokenFile || args.silent + args.flap + args.reboot > 0)) {
    // An adoption URL works once: routers from a token file cannot adopt again, and behaviours are the WebSocket fleet's.
    throw new ArgsError("--adopt cannot be combined with --token-file, --silent, --flap or --reboot");
  }
  if (args.silent + args.flap + args.reboot > args.routers) {
    throw new ArgsError("--silent + --flap + --reboot cannot exceed --routers");
  }
  return args;
};
