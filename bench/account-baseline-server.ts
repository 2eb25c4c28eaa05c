/**
 * Baseline for `npm run bench`: a bare Express 5 handler doing the logical work of GET /v1/account
 * with no framework and no validation: the bearer token's signature verified once per token and
 * then answered from a map (as the API's TokenVerifier does), the account row read by one raw SQL
 * query on the same PostgreSQL for the token's organization, and one JSON log line per request
 * through pino with the API's batched destination (the API writes one at LOG_LEVEL=info).
 * Like the API it sends no ETag (Express's default would hash every answer: work and a header
 * the API does not have, which made the baseline dearer and the ratios look better than they were).
 */
import { createSecretKey } from "node:crypto";
import express from "express";
import { jwtVerify } from "jose";
import pg from "pg";
import pino from "pino";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const key = createSecretKey(Buffer.from(process.env.JWT_SECRET ?? ""));
/** Verified tokens by Authorization header: organization id and expiry (seconds). */
const verified = new Map<string, { organizationId: string; exp: number }>();
const log = pino({ level: "info" }, pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }));

const organizationOf = async (authorization: string | undefined): Promise<string | undefined> => {
  if (authorization === undefined) return undefined;
  const hit = verified.get(authorization);
  if (hit) return hit.exp * 1000 > Date.now() ? hit.organizationId : undefined;
  if (!authorization.startsWith("Bearer ")) return undefined;
  try {
    const { payload } = await jwtVerify(authorization.slice(7), key, { algorithms: ["HS256"] });
    const entry = { organizationId: String(payload.id), exp: Number(payload.exp) };
    verified.set(authorization, entry);
    return entry.organizationId;
  } catch {
    return undefined;
  }
};

const app = express();
app.set("etag", false);
app.use((req, res, next) => {
  const started = process.hrtime.bigint();
  res.on("finish", () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    log.info({ method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 }, "request");
  });
  next();
});
app.get("/healthz", (_req, res) => {
  res.json({ status: "ok" });
});
app.get("/v1/account", async (req, res) => {
  const organizationId = await organizationOf(req.headers.authorization);
  if (organizationId === undefined) {
    res.status(401).json({ error: "unauthenticated" });
    return;
  }
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
  log.flush();
  void pool.end().then(() => process.exit(0));
});
