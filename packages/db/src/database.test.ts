import { describe, expect, it } from "vitest";
import { openDatabase, POOL_IDLE_MS, type Query, queryOf } from "./database.ts";
import { AccountsRepository } from "./repositories/accounts.repository.ts";
import { IdentityWorkflow } from "./identity/identity-workflow.ts";
import { createTestDatabase, makeAccount, makeChildOrganization, makeUser, uniqueEmail } from "./testing/index.ts";
import type { SqlEntityManager } from "@mikro-orm/sql";

describe("database", () => {
  it("migrations produce exactly the schema the entities describe", async () => {
    const db = await createTestDatabase();
    try {
      expect(await db.isReady()).toBe(true);
      const diff = await db.orm.schema.getUpdateSchemaSQL({ wrap: false });
      expect(diff.trim()).toBe("");
    } finally {
      await db.close();
    }
  });

  it("ping answers while the database is open and rejects once it is closed", async () => {
    const db = await createTestDatabase();
    await expect(db.ping()).resolves.toBeUndefined();
    await db.close();
    await expect(db.ping()).rejects.toThrow();
  });

  it("transaction commits its statements together and rolls them all back when work throws", async () => {
    const db = await createTestDatabase();
    try {
      const name = `tx-${crypto.randomUUID()}`;
      const insert = "insert into organizations (id, name, parent_id, created_at) values ($1, $2, null, now())";
      await expect(
        db.transaction(async (query) => {
          await query(insert, [crypto.randomUUID(), name]);
          throw new Error("abort");
        }),
      ).rejects.toThrow("abort");
      expect(await db.query("select 1 from organizations where name = $1", [name])).toEqual([]);
      const id = await db.transaction(async (query) => {
        const created = crypto.randomUUID();
        await query(insert, [created, name]);
        await query(insert, [crypto.randomUUID(), `${name}-2`]);
        return created;
      });
      expect(await db.query<{ id: string }>("select id from organizations where name = $1", [name])).toEqual([{ id }]);
    } finally {
      await db.close();
    }
  });

  it("the handle's typed statements run in its transaction and give values as the entities declare", async () => {
    const db = await createTestDatabase();
    try {
      const name = `kysely-${crypto.randomUUID()}`;
      const createdAt = new Date("2026-11-29T03:17:18.123Z");
      const insert = (query: Query, id: string) =>
        query.kysely.insertInto("organizations").values({ id, name, parent_id: null, created_at: createdAt }).execute();
      await expect(
        db.transaction(async (query) => {
          await insert(query, crypto.randomUUID());
          // The raw runner of the same handle sees the typed statement's row: one connection.
          expect(await query("select 1 from organizations where name = $1", [name])).toHaveLength(1);
          throw new Error("abort");
        }),
      ).rejects.toThrow("abort");
      expect(await queryOf(db).kysely.selectFrom("organizations").where("name", "=", name).execute()).toEqual([]);

      const id = crypto.randomUUID();
      await db.transaction((query) => insert(query, id));
      const row = await queryOf(db)
        .kysely.selectFrom("organizations")
        .where("name", "=", name)
        .select(["id", "created_at", "parent_id"])
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ id, created_at: createdAt, parent_id: null });
      expect(row.created_at).toBeInstanceOf(Date);
      const renamed = await db.query.kysely
        .updateTable("organizations")
        .set({ name: `${name}-2` })
        .where("id", "=", id)
        .executeTakeFirst();
      expect(renamed.numUpdatedRows).toBe(1n);
      // Kysely may not open a transaction of its own: db.transaction owns them.
      await expect(db.query.kysely.transaction().execute(async () => 1)).rejects.toThrow("db.transaction");
    } finally {
      await db.close();
    }
  });

  it("uses one pool of poolSize connections for the ORM and raw SQL alike", async () => {
    const base = await createTestDatabase();
    const db = base.url ? await openDatabase({ databaseUrl: base.url, dataDir: "memory", poolSize: 2 }) : base;
    try {
      const pids = await Promise.all([
        ...[1, 2, 3].map(
          async () => (await db.query<{ pid: number }>("select pg_backend_pid() as pid, pg_sleep(0.05)"))[0]?.pid,
        ),
        ...[1, 2, 3].map(async () => {
          const em = db.orm.em.fork() as SqlEntityManager;
          const [row] = await em.execute<Array<{ pid: number }>>("select pg_backend_pid() as pid, pg_sleep(0.05)");
          return row?.pid;
        }),
      ]);
      // Six concurrent statements through both paths never used more than the pool's two connections.
      expect(new Set(pids).size).toBeLessThanOrEqual(2);
      if (base.url) {
        const [open] = await base.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name <> 'fleet-jobs'",
        );
        // This handle's two plus the test database's own pool.
        expect(open?.n).toBeLessThanOrEqual(2 + 5);
        // Idle connections outlive two 30 s heartbeat intervals (pg's own default drops them after 10 s).
        const connection = db.orm.em.getConnection() as unknown as { getNativeClient(): Promise<unknown> };
        const pool = (await connection.getNativeClient()) as { options: { idleTimeoutMillis?: number } };
        expect(pool.options.idleTimeoutMillis).toBe(POOL_IDLE_MS);
        expect(POOL_IDLE_MS).toBeGreaterThanOrEqual(60_000);
      }
    } finally {
      if (db !== base) await db.close();
      await base.close();
    }
  });

  it("applying migrations twice is a no-op", async () => {
    const db = await createTestDatabase();
    try {
      await db.migrate();
      const applied = await db.query<{ name: string }>("select name from mikro_orm_migrations");
      expect(applied.map((r) => r.name)).toContain("20261121-001-accounts");
      expect(new Set(applied.map((r) => r.name)).size).toBe(applied.length);
    } finally {
      await db.close();
    }
  });

  it("login workflow creates user, default organization and team once", async () => {
    const db = await createTestDatabase();
    try {
      const identity = new IdentityWorkflow(db);
      const email = uniqueEmail();
      const [a, b] = await Promise.all([identity.loginByEmail(email), identity.loginByEmail(email.toUpperCase())]);
      expect(a.userId).toBe(b.userId);
      expect(a.organizationId).toBe(b.organizationId);
      expect(a.teamId).toBe(b.teamId);
      const again = await identity.loginByEmail(email);
      expect(again.created).toBe(false);
      expect(again.organizationId).toBe(a.organizationId);
      const owners = await db.query<{ role: string }>(
        "select role from organization_members where user_id = $1 and organization_id = $2",
        [a.userId, a.organizationId],
      );
      expect(owners.map((o) => o.role)).toEqual(["owner"]);
    } finally {
      await db.close();
    }
  });

  it("login of a member removed from their current organization falls back to one they act in", async () => {
    const db = await createTestDatabase();
    try {
      const identity = new IdentityWorkflow(db);
      const email = uniqueEmail();
      const own = await identity.loginByEmail(email);
      const other = await makeUser(db);
      const child = await makeChildOrganization(db, other.organizationId);
      const join = async () => {
        await db.query(
          "insert into organization_members (id, organization_id, user_id, role, created_at) values (gen_random_uuid(), $1, $2, 'technician', now())",
          [child.organizationId, own.userId],
        );
        await db.query("update users set current_organization_id = $1 where id = $2", [
          child.organizationId,
          own.userId,
        ]);
      };
      const leave = () =>
        db.query("delete from organization_members where organization_id = $1", [child.organizationId]);
      await join();
      expect((await identity.loginByEmail(email)).organizationId).toBe(child.organizationId);
      await leave();
      const back = await identity.loginByEmail(email);
      expect(back.organizationId).toBe(own.organizationId);
      const [current] = await db.query<{ id: string }>(
        "select current_organization_id as id from users where id = $1",
        [own.userId],
      );
      expect(current?.id).toBe(own.organizationId);
      // With no membership left anywhere, a new default organization (owner) as for a new user.
      await join();
      await db.query("delete from organization_members where organization_id = $1", [own.organizationId]);
      await leave();
      const fresh = await identity.loginByEmail(email);
      expect([own.organizationId, child.organizationId]).not.toContain(fresh.organizationId);
      const roles = await db.query<{ role: string }>(
        "select role from organization_members where user_id = $1 and organization_id = $2",
        [own.userId, fresh.organizationId],
      );
      expect(roles.map((r) => r.role)).toEqual(["owner"]);
    } finally {
      await db.close();
    }
  });

  it("billing context resolves the top of an organization tree", async () => {
    const db = await createTestDatabase();
    try {
      const root = await makeUser(db);
      const child = await makeChildOrganization(db, root.organizationId);
      const grandchild = await makeChildOrganization(db, child.organizationId);
      const accounts = new AccountsRepository(db);
      expect((await accounts.billingContext(grandchild.organizationId))?.rootOrganizationId).toBe(root.organizationId);
      expect((await accounts.billingContext(root.organizationId))?.account).toBeNull();
      await makeAccount(db, root.organizationId, { name: "Root Co" });
      const context = await accounts.billingContext(grandchild.organizationId);
      expect(context?.account?.name).toBe("Root Co");
      expect(context?.account?.createdAt).toBeInstanceOf(Date);
      expect(Number.isNaN(context?.account?.createdAt.getTime())).toBe(false);
      expect(await accounts.billingContext(crypto.randomUUID())).toBeNull();
      // A second account for the same organization loses the race cleanly.
      expect(await makeAccount(db, root.organizationId)).toBeNull();
    } finally {
      await db.close();
    }
  });
});
