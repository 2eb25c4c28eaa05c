import {
  composeTunnelAgent,
  type RunningTunnelAgent,
  type StartTunnelAgentOptions,
  type TunnelAgentControls,
  type TunnelAgentOverrides,
} from "../start-tunnel-agent.ts";

/** A tunnel agent a test can drive: its job queue, expiry, reconciliation and relay by hand. */
export type TestTunnelAgent = RunningTunnelAgent & TunnelAgentControls;

export type TestTunnelAgentOptions = StartTunnelAgentOptions & TunnelAgentOverrides;

/**
 * The tunnel agent as `startTunnelAgent` composes it, with what only tests change (a clock, a fake
 * connector, no job loop, a hub device) and the controls production never calls.
 */
export const startTestTunnelAgent = ({
  config,
  db,
  logger,
  accessPasswordKey,
  ...overrides
}: TestTunnelAgentOptions): Promise<TestTunnelAgent> =>
  composeTunnelAgent({ config, db, logger, ...(accessPasswordKey ? { accessPasswordKey } : {}) }, overrides);
