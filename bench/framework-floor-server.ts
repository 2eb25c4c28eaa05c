/**
 * The frameworks' own floor for `npm run bench`: one account-shaped answer (no database, no auth,
 * no logging) served three ways in one process: by a bare Express handler (`/bare`), by tRPC's own
 * Express adapter (`/trpc/account.get`) and by trpc-to-openapi's node handler (`/v1/account`), as
 * both are shipped, with the API's Express settings. What the two cost over the bare handler is
 * CPU the API spends per request before any of its own work. Under `/stages/` the tRPC answer is
 * built step by step from tRPC's public exports, so bench/trpc-adapter-pieces.ts can say what each
 * step of the adapter costs: the procedure alone, + the Fetch `Request`, + `fetchRequestHandler`
 * read with `response.text()`, + the body piped through a `WritableStream` as the adapter does.
 */
import { initTRPC } from "@trpc/server";
import { createExpressMiddleware } from "@trpc/server/adapters/express";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { incomingMessageToRequest } from "@trpc/server/adapters/node-http";
import express from "express";
import { createOpenApiNodeHttpHandler, type OpenApiMeta } from "trpc-to-openapi";
import { z } from "zod";

const account = {
  id: "1b1c57a4-5d0e-4d58-9d3c-7f1f4f3a0c11",
  name: "Bench Networks",
  email: "billing@bench.example",
  currency: "eur",
  balance: 0,
  address: { city: null, country: "DE", line1: null, line2: null, postal_code: null, state: null },
  created_at: "2026-11-29 06:00:00",
};
const ZAccount = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string(),
  currency: z.string(),
  balance: z.number(),
  address: z.object({
    city: z.string().nullable(),
    country: z.string(),
    line1: z.string().nullable(),
    line2: z.string().nullable(),
    postal_code: z.string().nullable(),
    state: z.string().nullable(),
  }),
  created_at: z.string(),
});
const t = initTRPC.meta<OpenApiMeta>().create({ isDev: false });
const router = t.router({
  account: t.router({
    get: t.procedure
      .meta({ openapi: { method: "GET", path: "/v1/account" } })
      .input(z.void())
      .output(ZAccount)
      .query(async () => account),
  }),
});

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.get("/healthz", (_req, res) => {
  res.json({ status: "ok" });
});
app.get("/bare", async (_req, res) => {
  res.json(await Promise.resolve(account));
});
app.use("/trpc", createExpressMiddleware({ router }));
const caller = t.createCallerFactory(router)({});
app.get("/stages/procedure", async (_req, res) => {
  res.json({ result: { data: await caller.account.get() } });
});
app.get("/stages/request", async (req, res) => {
  incomingMessageToRequest(req, res, { maxBodySize: null });
  res.json({ result: { data: await caller.account.get() } });
});
for (const pipe of [false, true])
  app.use(pipe ? "/stages/pipe" : "/stages/text", async (req, res) => {
    const request = incomingMessageToRequest(req, res, { maxBodySize: null });
    const response = await fetchRequestHandler({ endpoint: "", req: request, router });
    res.statusCode = response.status;
    for (const [key, value] of response.headers) res.setHeader(key, value);
    if (!pipe || !response.body) return void res.end(await response.text());
    await response.body.pipeTo(new WritableStream({ write: (chunk) => void res.write(chunk) }));
    res.end();
  });
const rest = createOpenApiNodeHttpHandler({ router });
app.use((req, res, next) => {
  void rest(req, res, next);
});
const server = app.listen(Number(process.env.PORT), "127.0.0.1");
process.once("SIGTERM", () => {
  server.close();
  process.exit(0);
});
