import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { providerSession } from "../provider-session.ts";
import { session } from "../session.ts";
import { useTRPC, useTRPCClient } from "../trpc.ts";

interface Choice {
  id: string;
  name: string;
  level: number;
}

/**
 * The organization the console acts in (docs/console.md "Customers and members"): the user's
 * organizations and those below the current one, indented as a tree. Choosing one asks the
 * session (or, in development, dev-login) for a token of it (it becomes the user's current
 * organization); a pasted token or an API key names one organization for good, so it shows no
 * switcher.
 */
export const OrganizationSwitcher = () => {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const [switching, setSwitching] = useState(false);
  const fromProvider = session.fromProvider();
  const switchable = fromProvider || session.fromDevLogin();
  const me = useQuery({ ...trpc.me.get.queryOptions(), enabled: switchable });
  const tree = useQuery({ ...trpc.organizations.list.queryOptions(), enabled: switchable });
  if (!switchable || !me.data || !tree.data) return null;
  const email = me.data.email;
  // dev-login names its user by email.
  if (!fromProvider && email === null) return null;
  const current = me.data.organization_id;
  const choices: Choice[] = [];
  const seen = new Set<string>();
  for (const o of me.data.organizations) {
    if (o.id === current) {
      // The current one, with everything below it in tree order.
      for (const node of tree.data.data) {
        if (seen.has(node.id)) continue;
        seen.add(node.id);
        choices.push({ id: node.id, name: node.name, level: node.level - (tree.data.data[0]?.level ?? 1) });
      }
    } else if (!seen.has(o.id)) {
      seen.add(o.id);
      choices.push({ id: o.id, name: o.name, level: 0 });
    }
  }
  if (!seen.has(current)) {
    for (const node of tree.data.data) {
      if (seen.has(node.id)) continue;
      seen.add(node.id);
      choices.push({ id: node.id, name: node.name, level: node.level - (tree.data.data[0]?.level ?? 1) });
    }
  }
  const choose = async (id: string) => {
    setSwitching(true);
    try {
      // Nothing of the previous organization stays on screen: every query starts over, and those
      // on screen fetch again (clear() would leave mounted pages showing the old answers).
      if (fromProvider) {
        if (await providerSession.resume(client, id)) await queryClient.resetQueries();
        return;
      }
      const next = await client.auth.devLogin
        .mutate({ email: email ?? "", organization_id: id })
        .catch(() => undefined);
      if (!next) return;
      session.signInFromDevLogin(next.access_token);
      await queryClient.resetQueries();
    } finally {
      setSwitching(false);
    }
  };
  return (
    <label className="switcher">
      <span className="visually-hidden">Organization</span>
      <select value={current} disabled={switching} onChange={(e) => void choose(e.target.value)}>
        {choices.map((c) => (
          <option key={c.id} value={c.id}>
            {`${"\u2003".repeat(c.level)}${c.name}`}
          </option>
        ))}
      </select>
    </label>
  );
};
