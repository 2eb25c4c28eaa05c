import { BillingMirrorRepository, BillingMirrorWriter, type Database } from "@fleet/db";

/**
 * The billing mirror as the billing services use it (docs/billing.md "Billing mirror"): the
 * repository's reads, plus the transactions that write one account's mirror, which the services
 * open here (a repository never does).
 */
export class BillingMirror extends BillingMirrorRepository {
  readonly #db: Database;

  constructor(db: Database) {
    super(db);
    this.#db = db;
  }

  /** A transaction whose writer finds its account itself (`accountByCustomer` locks it). */
  transaction<T>(work: (writer: BillingMirrorWriter) => Promise<T>): Promise<T> {
    return this.#db.transaction((query) => work(new BillingMirrorWriter(query)));
  }

  /**
   * A transaction on one account's mirror, its account locked first: every writer of one account
   * takes the same lock first, so a saved card and Stripe's event about it never deadlock.
   */
  accountTransaction<T>(accountId: string, work: (writer: BillingMirrorWriter) => Promise<T>): Promise<T> {
    return this.#db.transaction(async (query) => {
      const writer = new BillingMirrorWriter(query);
      await writer.lockAccount(accountId);
      return work(writer);
    });
  }

  /**
   * Runs `work` only if no other process holds the cluster-wide reconciliation lock (held by an
   * open transaction for the duration); false when skipped. PGlite is one process with one
   * connection: no lock needed, and holding one would block `work`'s own queries.
   */
  async withClusterLock(key: number, work: () => Promise<void>): Promise<boolean> {
    if (this.#db.driver !== "postgresql") {
      await work();
      return true;
    }
    return this.#db.transaction(async (query) => {
      if (!(await new BillingMirrorWriter(query).tryClusterLock(key))) return false;
      await work();
      return true;
    });
  }
}
