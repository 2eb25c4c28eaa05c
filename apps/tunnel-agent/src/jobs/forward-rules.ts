import type { ForwardRecord } from "@fleet/db";
import type { RouterOsClient } from "../routeros/routeros-client.ts";
import {
  addForwardRule,
  listForwardRules,
  listForwardRulesJson,
  parseJsonRules,
  parseTerseRules,
  removeForwardRule,
  type TaggedNatRule,
} from "../routeros/routeros-commands.ts";
import { RouterOsCommandError } from "../routeros/ssh-routeros-client.ts";
import { PermanentJobError } from "./job-errors.ts";

/** Where a forward's rule is pinned: the router's assigned address and, when set, the entry point's source. */
export interface RulePin {
  /** The router's assigned tunnel address (its row, never a reported value). */
  tunnelIp: string;
  /** ENTRY_POINT_TUNNEL_SOURCE, normalized by the config; undefined = no `src-address=`. */
  tunnelSource?: string | undefined;
}

/**
 * The rule a forward needs, checked field by field against what the router reports. A tagged rule
 * without `dst-address=<tunnel_ip>` (or with another source matcher than configured) is wrong: it
 * would open the LAN device on every address of the router (docs/api.md "Tunnel agent and entry point").
 */
export const ruleMatches = (rule: TaggedNatRule, forward: ForwardRecord, pin: RulePin): boolean =>
  !rule.disabled &&
  rule.raw.chain === "dstnat" &&
  rule.raw.action === "dst-nat" &&
  rule.raw.protocol === "tcp" &&
  rule.raw["dst-address"] === pin.tunnelIp &&
  (rule.raw["src-address"] ?? "") === (pin.tunnelSource ?? "") &&
  rule.dstPort === forward.port &&
  rule.toAddresses === forward.dstAddress &&
  rule.toPorts === forward.dstPort;

/** Builds the add command before any connection is made: a value the builders refuse is permanent. */
export const addCommandFor = (forward: ForwardRecord, pin: RulePin): string => {
  try {
    return addForwardRule({
      tunnelIp: pin.tunnelIp,
      port: forward.port,
      dstAddress: forward.dstAddress,
      dstPort: forward.dstPort,
      forwardId: forward.id,
      srcAddress: pin.tunnelSource,
    });
  } catch (error) {
    throw new PermanentJobError(
      `forward ${forward.id} holds a value no RouterOS command may carry: ${(error as Error).message}`,
    );
  }
};

/** Which listing a router understood last time, by router id (skips a doomed `:serialize` on old routers). */
export type RuleListingMemo = Map<string, "json" | "terse">;

/**
 * Lists the router's tagged rules: `:serialize to=json` first (RouterOS 7.13+), `print terse` when
 * the router does not know it or answers something that is not JSON. Other failures (timeouts, a
 * lost session) propagate: they say nothing about the router's version.
 */
export const readTaggedRules = async (
  router: RouterOsClient,
  memo?: { routerId: string; formats: RuleListingMemo },
): Promise<TaggedNatRule[]> => {
  if (memo?.formats.get(memo.routerId) !== "terse") {
    try {
      const rules = parseJsonRules(await router.exec(listForwardRulesJson()));
      memo?.formats.set(memo.routerId, "json");
      return rules;
    } catch (error) {
      if (!(error instanceof RouterOsCommandError) && !(error instanceof SyntaxError)) throw error;
      memo?.formats.set(memo.routerId, "terse");
    }
  }
  return parseTerseRules(await router.exec(listForwardRules()));
};

/**
 * Makes the router hold exactly one correct rule for the forward. Idempotent: a correct rule is
 * left alone (an at-least-once queue may run this twice); a wrong or duplicated one is replaced.
 * Answers whether the router had to change. `add` is the command built before connecting
 * (`addCommandFor`), so a forward no command may carry never opens a session.
 */
export const ensureRule = async (
  router: RouterOsClient,
  forward: ForwardRecord,
  pin: RulePin,
  existing: readonly TaggedNatRule[],
  add: string = addCommandFor(forward, pin),
): Promise<"present" | "added" | "replaced"> => {
  const mine = existing.filter((rule) => rule.forwardId === forward.id);
  const [only] = mine;
  if (mine.length === 1 && only && ruleMatches(only, forward, pin)) return "present";
  if (mine.length > 0) await router.exec(removeForwardRule(forward.id));
  await router.exec(add);
  return mine.length > 0 ? "replaced" : "added";
};
