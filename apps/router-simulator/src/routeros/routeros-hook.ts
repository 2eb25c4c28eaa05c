import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs as parseArgv } from "node:util";
import type { ConfigurationTables } from "./routeros-ssh-server.ts";
import { loadOrCreateHostKey, startSimulatedRouterOs } from "./simulated-routeros.ts";

/**
 * The RouterOS part of `npm run simulate` (docs/routeros.md "Simulator"): for each simulated router, an SSH
 * server on its tunnel_ip that speaks the agent's RouterOS commands and relays dst-nat rules to a
 * simulated LAN (an echo device and an HTTP device). Wired into the simulator through its
 * `onRouter` hook; its flags are taken out of argv before the simulator's own parser sees them.
 */
export interface RouterOsHookOptions {
  enabled: boolean;
  /** Must equal the agent's TUNNEL_SSH_PORT. */
  sshPort: number;
  /** Must equal the agent's TUNNEL_SSH_USER; any user when unset. */
  sshUser: string | undefined;
  /** OpenSSH public keys allowed to log in (the agent's); any correctly signed key when unset. */
  authorizedKeysFile: string | undefined;
  /** Host keys are kept here per tunnel_ip, so the agent's pins survive a simulator restart. */
  stateDir: string;
}

export const ROUTEROS_USAGE = `
RouterOS simulation (SSH on each router's tunnel_ip, dst-nat to a simulated LAN):
  --ssh-port P           SSH port, as the agent's TUNNEL_SSH_PORT (default TUNNEL_SSH_PORT, else 2222
                         in development and 22 with NODE_ENV=production)
  --ssh-user U           login name, as the agent's TUNNEL_SSH_USER (default: any)
  --authorized-keys F    public keys allowed in (default: DATA_DIR/tunnel-agent/id_ed25519.pub when
                         present, the key npm start generates; otherwise any signed key)
  --state-dir D          where simulated host keys and adopted routers are kept
                         (default DATA_DIR/simulator, i.e. ./.data/simulator)
  --no-ssh               heartbeats only`;

export class RouterOsArgsError extends Error {}

const ROUTEROS_OPTIONS = {
  "ssh-port": { type: "string" },
  "ssh-user": { type: "string" },
  "authorized-keys": { type: "string" },
  "state-dir": { type: "string" },
  "no-ssh": { type: "boolean" },
} as const;

/** Removes this module's flags from `argv`; the rest goes to the simulator's own parser. */
export const takeRouterOsArgs = (
  argv: readonly string[],
  defaults: { sshPort: number; sshUser: string | undefined; dataDir?: string } = { sshPort: 22, sshUser: undefined },
): { options: RouterOsHookOptions; rest: string[] } => {
  const dataDir = defaults.dataDir ?? ".data";
  const agentKey = path.join(dataDir, "tunnel-agent", "id_ed25519.pub");
  const options: RouterOsHookOptions = {
    enabled: true,
    sshPort: defaults.sshPort,
    sshUser: defaults.sshUser,
    authorizedKeysFile: existsSync(agentKey) ? agentKey : undefined,
    stateDir: path.join(dataDir, "simulator"),
  };
  // node:util's parser, not strict: the simulator's own flags pass through untouched (by their
  // position in argv, so `rest` is exactly what was typed) for its parser to check.
  const { tokens } = parseArgv({
    args: [...argv],
    options: ROUTEROS_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const taken = new Set<number>();
  for (const token of tokens) {
    if (token.kind !== "option" || !Object.hasOwn(ROUTEROS_OPTIONS, token.name)) continue;
    const name = token.name as keyof typeof ROUTEROS_OPTIONS;
    taken.add(token.index);
    if (name === "no-ssh") {
      options.enabled = false;
      continue;
    }
    const raw = token.value;
    if (raw === undefined || raw.startsWith("--")) throw new RouterOsArgsError(`${token.rawName} needs a value`);
    if (!token.inlineValue) taken.add(token.index + 1);
    if (name === "ssh-port") {
      if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) {
        throw new RouterOsArgsError("--ssh-port must be 1-65535");
      }
      options.sshPort = Number(raw);
    } else if (name === "ssh-user") options.sshUser = raw;
    else if (name === "authorized-keys") options.authorizedKeysFile = raw;
    else options.stateDir = raw;
  }
  const rest = argv.filter((_, index) => !taken.has(index));
  return { options, rest };
};

const readAuthorizedKeys = (file: string): string[] =>
  readFileSync(file, "utf8")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    // OpenSSH lines may end in a comment; ssh2 parses "type base64" only.
    .map((line) => line.split(/\s+/).slice(0, 2).join(" "));

/**
 * The simulator's `onRouter` hook: starts the RouterOS side of one router and answers its cleanup.
 * A router whose SSH port cannot be bound keeps beating; the problem is reported once.
 */
export const routerOsHook = (options: RouterOsHookOptions, say: (line: string) => void) => {
  const authorizedKeys = options.authorizedKeysFile ? readAuthorizedKeys(options.authorizedKeysFile) : undefined;
  let reported = false;
  return async (router: {
    tunnelIp: string;
    /** An adopted router decides logins from its own users and keys (docs/routeros.md "Simulator"). */
    authorize?: (username: string, publicKey: Buffer, address: string) => boolean;
    /** Its configuration tables, which offboarding empties (docs/routeros.md "Offboarding"). */
    configuration?: ConfigurationTables;
    /** Its script interpreter and reachability (fleet changes, reboots: routeros-device-system.ts). */
    script?: (text: string) => Promise<string>;
    reachable?: () => boolean;
  }): Promise<undefined | (() => Promise<void>)> => {
    if (!options.enabled) return undefined;
    try {
      const running = await startSimulatedRouterOs({
        tunnelIp: router.tunnelIp,
        sshPort: options.sshPort,
        hostKey: loadOrCreateHostKey(path.join(options.stateDir, "host-keys", `${router.tunnelIp}.key`)),
        ...(options.sshUser ? { sshUser: options.sshUser } : {}),
        ...(authorizedKeys ? { authorizedKeys } : {}),
        ...(router.authorize ? { authorize: router.authorize } : {}),
        ...(router.configuration ? { configuration: router.configuration } : {}),
        ...(router.script ? { script: router.script } : {}),
        ...(router.reachable ? { reachable: router.reachable } : {}),
      });
      return () => running.close();
    } catch (error) {
      if (!reported) {
        reported = true;
        say(
          `RouterOS SSH simulation unavailable on ${router.tunnelIp}:${options.sshPort} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); ` +
            "is the port free, and is the address a loopback one (TUNNEL_NETWORK inside 127.0.0.0/8)? Or run with --no-ssh",
        );
      }
      return undefined;
    }
  };
};
