/**
 * Baseline for `npm run bench`: a bare Express 5 handler answering the same account JSON from one
 * raw SQL query on the same PostgreSQL, with no framework, validation or token verification.
 * Like the API it sends no ETag (Express's default would hash every answer: work and a header
 * the API does not have, which made the baseline dearer and the ratios look better than they were).
 */
import express from "express";
import pg from "pg";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const organizationId = process.env.BENCH_ORG_ID ?? "";
const app = express();
app.set("etag", false);
app.get("/healthz", (_req, res) => {
  res.json({ status: "ok" });
});
app.get("/v1/account", async (_req, res) => {
  const { rows } = await pool.query(
    `select id, name, email, currency, balance_minor, address_city, address_country, address_line1, address_line2,
            address_postal_code, address_state, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as created_at
     from billing_accounts where organization_id = $1`,
    [organizationId],
  );
  const a = rows[0];
  res.json({
    id: a.id,
    name: a.name,
    email: a.email,
    currency: a.currency,
    balance: Number(a.balance_minor) / 100,
    address: {
      city: a.address_city,
      country: a.address_country,
      line1: a.address_line1,
      line2: a.address_line2,
      postal_code: a.address_postal_code,
      state: a.address_state,
    },
    created_at: a.created_at,
  });
});
const server = app.listen(Number(process.env.PORT), "127.0.0.1");
process.once("SIGTERM", () => {
  server.close();
  void pool.end().then(() => process.exit(0));
});
