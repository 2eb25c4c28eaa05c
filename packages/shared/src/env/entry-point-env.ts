import ipaddr from "ipaddr.js";
import { ConfigError, envBool, envPortRange, envString, type TEnv } from "./env-parsers.ts";

/**
 * The entry point of docs/operations.md "Configuration", read by the API (host and port range for new forwards)
 * and by the tunnel agent (where its relay listens). One parser so both read the same values.
 */
export interface EntryPointEnv {
  /** `ENTRY_POINT_HOST`: the hostname answered as `entry_point`, and the key ports are unique under. */
  host: string;
  /** `ENTRY_POINT_BIND`: the address the relay listens on. */
  bind: string;
  /** `ENTRY_POINT_PORTS`: inclusive range a forward's `port` is allocated from. */
  ports: readonly [number, number];
  /** `ENTRY_POINT_PROXY_PROTOCOL`: every relay connection starts with a PROXY v1/v2 header. */
  proxyProtocol: boolean;
}

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export const loadEntryPointEnv = (env: TEnv): EntryPointEnv => {
  const host = envString(env, "ENTRY_POINT_HOST", "localhost");
  if (!HOSTNAME.test(host) && !ipaddr.isValid(host)) {
    throw new ConfigError("ENTRY_POINT_HOST", `must be a hostname or IP address, got "${host}"`);
  }
  const bind = envString(env, "ENTRY_POINT_BIND", "127.0.0.1");
  if (!ipaddr.isValid(bind)) {
    throw new ConfigError("ENTRY_POINT_BIND", `must be an IP address to listen on, got "${bind}"`);
  }
  return {
    host: host.toLowerCase(),
    bind,
    ports: envPortRange(env, "ENTRY_POINT_PORTS", [40000, 40999]),
    proxyProtocol: envBool(env, "ENTRY_POINT_PROXY_PROTOCOL", false),
  };
};
