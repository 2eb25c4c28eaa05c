import { sql } from "kysely";
import type { Query } from "../database.ts";

export interface PortClaim<T> {
  /** ENTRY_POINT_HOST: ports are unique per entry point among active forwards and access sessions together. */
  entryPoint: string;
  /** Inclusive port range of the entry point (ENTRY_POINT_PORTS). */
  ports: readonly [number, number];
  /** How often to try again after losing a port to a concurrent create. */
  attempts: number;
  /** Inserts the session on `port`; null when a concurrent create took the port first (`on conflict do nothing`). */
  insert: (port: number) => Promise<T | null>;
  /**
   * Called once when the range looks full: frees ports of sessions past expiry that no sweep closed
   * yet; answers whether it freed any (then the search runs again).
   */
  freeStale?: () => Promise<boolean>;
}

/**
 * The one port-allocation loop of the entry point (forwards and temporary router access): a random
 * free port of the range, taken by an insert that the partial unique index arbitrates, then
 * another free port. Runs in the creating transaction; null when the range is exhausted.
 */
export const claimEntryPointPort = async <T>(query: Query, claim: PortClaim<T>): Promise<T | null> => {
  let freedStale = false;
  for (let attempt = 0; attempt < claim.attempts; attempt++) {
    // Raw: a random free port of a range is read off generate_series, a function, not a table.
    const { rows } = await sql<{ port: number }>`
      select p::int as port from generate_series(${claim.ports[0]}::int, ${claim.ports[1]}::int) as p
      where not exists (select 1 from forwards f where f.entry_point = ${claim.entryPoint} and f.port = p and f.status = 'active')
        and not exists (select 1 from router_access a where a.entry_point = ${claim.entryPoint} and a.port = p and a.status = 'active')
      order by random() limit 1`.execute(query.kysely);
    const free = rows[0];
    if (!free) {
      if (freedStale || !claim.freeStale || !(await claim.freeStale())) return null;
      freedStale = true;
      continue;
    }
    const inserted = await claim.insert(free.port);
    if (inserted !== null) return inserted;
  }
  return null;
};
