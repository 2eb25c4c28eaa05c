import {
  accessUsername,
  IPV4_OR_CIDR_PATTERN,
  command,
  findWhere,
  isUuid,
  type RosStatement,
  renderRouterOsScript,
  routerOsDuration,
  str,
} from "@fleet/shared";

/**
 * The RouterOS commands of temporary router access (docs/routeros.md "Temporary access"), built
 * from the typed script model like the adoption script: every value is a typed node rendered by the
 * one escaping renderer, so no name, password or address can end a quote or start an expansion.
 */

/**
 * docs/api.md "Temporary router access": the two groups and their exact policies. Never `policy`
 * (RouterOS's right to manage users, groups and other users' scheduler entries: with it a temporary
 * user could add a permanent one, widen its own group or remove its expiry), `sensitive` or `password`.
 */
export const ACCESS_GROUPS = {
  read: { name: "fleet-read", policy: "read,winbox,ssh,web,test" },
  full: { name: "fleet-full", policy: "read,winbox,ssh,web,test,write,reboot" },
} as const;

export type TAccessLevel = keyof typeof ACCESS_GROUPS;

const USERNAME = /^fleet-tmp-[0-9a-f]{8}$/;
const IPV4_OR_CIDR = IPV4_OR_CIDR_PATTERN;

export { accessUsername };

const checkUsername = (username: string): string => {
  if (!USERNAME.test(username)) throw new Error(`not a temporary user name: ${JSON.stringify(username)}`);
  return username;
};

const comment = (accessId: string) => {
  if (!isUuid(accessId)) throw new Error(`access id must be a UUID, got ${JSON.stringify(accessId)}`);
  return `fleet-access:${accessId.toLowerCase()}`;
};

const line = (statement: RosStatement): string => renderRouterOsScript([statement]).trimEnd();

/** Creates the level's group (a router that has it already answers a failure the caller ignores). */
export const addAccessGroup = (level: TAccessLevel): string =>
  line(
    command("user group", "add", {
      name: str(ACCESS_GROUPS[level].name),
      policy: str(ACCESS_GROUPS[level].policy),
      comment: str("fleet temporary access"),
    }),
  );

/** Puts the group's policy back to exactly the contract's, whatever someone changed on the router. */
export const setAccessGroupPolicy = (level: TAccessLevel): string =>
  line(
    command("user group", "set", { policy: str(ACCESS_GROUPS[level].policy) }, [
      findWhere({ name: str(ACCESS_GROUPS[level].name) }),
    ]),
  );

export interface AddAccessUserInput {
  accessId: string;
  level: TAccessLevel;
  password: string;
  /** The entry point's tunnel source (ENTRY_POINT_TUNNEL_SOURCE): the only address the user may log in from. */
  allowedAddress: string;
}

/** The temporary user; its password travels only inside this command, over the agent's SSH session. */
export const addAccessUser = (input: AddAccessUserInput): string => {
  if (!IPV4_OR_CIDR.test(input.allowedAddress)) {
    throw new Error(`allowedAddress must be an IPv4 address or CIDR, got ${JSON.stringify(input.allowedAddress)}`);
  }
  if (!/^[A-Za-z0-9]{16,64}$/.test(input.password)) throw new Error("the password must be 16-64 letters and digits");
  return line(
    command("user", "add", {
      name: str(accessUsername(input.accessId)),
      group: str(ACCESS_GROUPS[input.level].name),
      password: str(input.password),
      address: str(input.allowedAddress),
      comment: str(comment(input.accessId)),
    }),
  );
};

/** What removes the user: run by the agent at expiry or revoke, and by the router's own scheduler. */
const removalStatements = (username: string): RosStatement[] => [
  command("user active", "request-logout", {}, [findWhere({ name: str(checkUsername(username)) })]),
  command("user", "remove", {}, [findWhere({ name: str(username) })]),
  command("system scheduler", "remove", {}, [findWhere({ name: str(username) })]),
];

/**
 * The router-side expiry: a scheduler entry that, `afterMs` after it is added, logs the user out,
 * removes it and removes itself, even if the system is unreachable by then. It runs on the router's
 * own clock from the moment it is added (no start date: nothing depends on the router's time zone).
 */
export const addAccessScheduler = (accessId: string, afterMs: number): string => {
  const username = accessUsername(accessId);
  const onEvent = removalStatements(username).map(line).join("; ");
  return line(
    command("system scheduler", "add", {
      name: str(username),
      interval: routerOsDuration(Math.ceil(afterMs / 1000) * 1000),
      "on-event": str(onEvent),
      policy: str("read,write,policy,test"),
      comment: str(comment(accessId)),
    }),
  );
};

/** The agent's removal at expiry or revoke: sessions dropped, user and scheduler entry gone. */
export const removeAccessCommands = (accessId: string): string[] =>
  removalStatements(accessUsername(accessId)).map(line);
