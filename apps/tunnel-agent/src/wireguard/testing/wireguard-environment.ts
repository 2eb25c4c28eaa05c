import { execFileSync } from "node:child_process";

/**
 * Why real-tunnel tests cannot run here, or undefined when they can: they need root (network
 * namespaces, interfaces) and wireguard-go, wireguard-tools and iproute2 (`.ci/run` installs them).
 */
export const realTunnelUnavailable = (): string | undefined => {
  if (process.platform !== "linux") return `not Linux (${process.platform})`;
  if (typeof process.getuid === "function" && process.getuid() !== 0) return "not running as root";
  for (const [tool, args] of [
    ["wireguard-go", ["--version"]],
    ["wg", ["--version"]],
    ["ip", ["-V"]],
  ] as const) {
    try {
      execFileSync(tool, [...args], { stdio: "ignore" });
    } catch {
      return `${tool} is not installed (apt-get install --no-install-recommends wireguard-go wireguard-tools iproute2)`;
    }
  }
  return undefined;
};
