import type { ForwardRecord } from "@fleet/db";
import type { RouterOsClient } from "../routeros/routeros-client.ts";
import {
  addForwardRule,
  listForwardRules,
  parseTerseRules,
  removeForwardRule,
  type TerseNatRule,
} from "../routeros/routeros-commands.ts";
import { PermanentJobError } from "./job-errors.ts";

/** The rule a forward needs, checked field by field against what the router reports. */
export const ruleMatches = (rule: TerseNatRule, forward: ForwardRecord): boolean =>
  !rule.disabled &&
  rule.raw.chain === "dstnat" &&
  rule.raw.action === "dst-nat" &&
  rule.raw.protocol === "tcp" &&
  rule.dstPort === forward.port &&
  rule.toAddresses === forward.dstAddress &&
  rule.toPorts === forward.dstPort;

/** Builds the add command before any connection is made: a value the builders refuse is permanent. */
export const addCommandFor = (forward: ForwardRecord): string => {
  try {
    return addForwardRule({
      port: forward.port,
      dstAddress: forward.dstAddress,
      dstPort: forward.dstPort,
      forwardId: forward.id,
    });
  } catch (error) {
    throw new PermanentJobError(
      `forward ${forward.id} holds a value no RouterOS command may carry: ${(error as Error).message}`,
    );
  }
};

export const readTaggedRules = async (router: RouterOsClient): Promise<TerseNatRule[]> =>
  parseTerseRules(await router.exec(listForwardRules()));

/**
 * Makes the router hold exactly one correct rule for the forward. Idempotent: a correct rule is
 * left alone (an at-least-once queue may run this twice); a wrong or duplicated one is replaced.
 * Answers whether the router had to change.
 */
export const ensureRule = async (
  router: RouterOsClient,
  forward: ForwardRecord,
  existing: readonly TerseNatRule[],
): Promise<"present" | "added" | "replaced"> => {
  const add = addCommandFor(forward);
  const mine = existing.filter((rule) => rule.forwardId === forward.id);
  const [only] = mine;
  if (mine.length === 1 && only && ruleMatches(only, forward)) return "present";
  if (mine.length > 0) await router.exec(removeForwardRule(forward.id));
  await router.exec(add);
  return mine.length > 0 ? "replaced" : "added";
};
