/**
 * A distinct loopback address per simulated router, used as its `tunnel_ip` (the tunnel agent and
 * the RouterOS simulation connect there) and as the source of its heartbeat connection.
 * 127.0.0.0/24 is left to hand-written tests; simulated routers start at 127.0.1.1.
 */
export const tunnelIpFor = (index: number): string => {
  if (!Number.isInteger(index) || index < 0 || index >= 254 * 254 * 254)
    throw new RangeError(`no loopback address for router ${index}`);
  const host = (index % 254) + 1;
  const third = (Math.floor(index / 254) % 254) + 1;
  const second = Math.floor(index / (254 * 254));
  return `127.${second}.${third}.${host}`;
};
