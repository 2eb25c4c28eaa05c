/**
 * `npm run bench:sign-in`: sign-in through a real OpenID Connect provider (docs/api.md "Sign-in"),
 * against the API started alone on PostgreSQL. Measures the round trip a browser makes (start ->
 * provider's login and consent pages -> callback -> POST /v1/auth/token), and the token endpoint's
 * server CPU per call (user + system time of the API process, /proc) under a closed loop.
 * Options: --sign-ins N (default 20), --tokens N (default 2000), --concurrency N (default 8).
 * The provider runs in this process (oidc-provider, as in the tests), so the round trip includes it.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { CookieJar, signInThroughProvider, startTestIdp } from "@fleet/api/testing/idp";
import pg from "pg";
import { cpuTimesMs, freePort, startProcess, stopProcess } from "./lib/processes.ts";

const { values } = parseArgs({
  options: {
    "sign-ins": { type: "string", default: "20" },
    tokens: { type: "string", default: "2000" },
    concurrency: { type: "string", default: "8" },
  },
});
const signIns = Number(values["sign-ins"]);
const tokens = Number(values.tokens);
const concurrency = Number(values.concurrency);

const baseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const dbName = `bench_${Date.now().toString(36)}`;
const admin = new pg.Client({ connectionString: baseUrl });
await admin.connect();
await admin.query(`create database "${dbName}"`);
await admin.end();
const dbUrl = new URL(baseUrl);
dbUrl.pathname = `/${dbName}`;

const apiPort = await freePort();
const api = `http://127.0.0.1:${apiPort}`;
const idp = await startTestIdp({ redirectUris: [`${api}/v1/auth/oidc/callback`] });
const child = await startProcess(
  path.resolve(import.meta.dirname, "../apps/api/src/main.ts"),
  {
    ...idp.env(),
    DATABASE_URL: dbUrl.toString(),
    PORT: String(apiPort),
    API_PUBLIC_URL: api,
    JWT_SECRET: `bench-secret-${crypto.randomUUID()}`,
    LOG_LEVEL: "info",
    STRIPE_EMULATOR_PORT: "0",
    DATA_DIR: "memory",
    RATE_LIMIT_PER_MINUTE: "1000000",
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "1000000",
  },
  `${api}/healthz`,
);

const tokenCall = async (jar: CookieJar): Promise<number> => {
  const response = await jar.fetch(`${api}/v1/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  await response.arrayBuffer();
  return response.status;
};

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

try {
  // The browser's whole way: a new person each time (the first sign-in creates the user too).
  const roundTrips: number[] = [];
  let jar = new CookieJar();
  for (let i = 0; i < signIns; i++) {
    jar = new CookieJar();
    const started = performance.now();
    const callback = await signInThroughProvider(jar, api, `bench-${i}-${crypto.randomUUID().slice(0, 8)}`);
    if (callback.status !== 302) throw new Error(`callback answered ${callback.status}`);
    if ((await tokenCall(jar)) !== 200) throw new Error("the token endpoint refused the new session");
    roundTrips.push(performance.now() - started);
  }
  roundTrips.sort((a, b) => a - b);
  console.log(
    `sign-in round trip (start -> provider -> callback -> token), ${signIns} people: min ${roundTrips[0]?.toFixed(1)} ms, p50 ${quantile(roundTrips, 0.5).toFixed(1)} ms, max ${roundTrips.at(-1)?.toFixed(1)} ms`,
  );

  // The token endpoint alone, with one session: warm up, then measure.
  for (let i = 0; i < 200; i++) await tokenCall(jar);
  const before = await cpuTimesMs(child.pid);
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tokens) {
        next++;
        const t0 = performance.now();
        if ((await tokenCall(jar)) === 200) latencies.push(performance.now() - t0);
        else errors++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const after = await cpuTimesMs(child.pid);
  latencies.sort((a, b) => a - b);
  const perCall = ((after.total - before.total) * 1000) / tokens;
  console.log(
    `POST /v1/auth/token x${tokens} (concurrency ${concurrency}): ${(tokens / elapsed).toFixed(0)} calls/s, p50 ${quantile(latencies, 0.5).toFixed(2)} ms, p99 ${quantile(latencies, 0.99).toFixed(2)} ms, server CPU ${perCall.toFixed(0)} µs/call (system ${(((after.system - before.system) * 1000) / tokens).toFixed(0)} µs), errors ${errors}`,
  );
} finally {
  await stopProcess(child);
  await idp.close();
  const cleanup = new pg.Client({ connectionString: baseUrl });
  await cleanup.connect();
  await cleanup.query(`drop database if exists "${dbName}" with (force)`);
  await cleanup.end();
}
