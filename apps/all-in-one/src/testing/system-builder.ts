import type { Database } from "@fleet/db";
import type { Clock } from "@fleet/shared";
import { startTestTunnelAgent, type TestTunnelAgent } from "@fleet/tunnel-agent/testing";
import { composeSystem, type RunningSystem, type StartAllOptions } from "../start-all.ts";

export interface TestSystemOptions extends StartAllOptions {
  /** A database the test made itself (default: one opened from the configuration). */
  db?: Database;
  /** Time of domain rules (forward and access expiry, router metrics); a test passes a `ManualClock`. */
  clock?: Clock;
}

/** The whole system as `startAll` starts it, with a tunnel agent the test can drive by hand. */
export const startTestSystem = ({ db, clock, ...options }: TestSystemOptions): Promise<TestSystem> =>
  composeSystem(options, {
    ...(db ? { db } : {}),
    ...(clock ? { clock } : {}),
    startAgent: (agentOptions, agentClock) =>
      startTestTunnelAgent({ ...agentOptions, ...(agentClock ? { clock: agentClock } : {}) }),
  });

/** The system a test started: `RunningSystem` with the agent's controls. */
export type TestSystem = RunningSystem<TestTunnelAgent>;
