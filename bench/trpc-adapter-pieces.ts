/**
 * `npm run bench:trpc-adapter`: where tRPC's Express adapter spends the CPU it costs over a bare
 * Express answer (the framework floor of `npm run bench`). First over HTTP, on
 * framework-floor-server.ts: server CPU per call for the bare answer, the adapter's steps built up
 * from tRPC's public exports (`/stages/`), the adapter itself, batches of 1, 2 and 4 calls (what
 * httpBatchLink sends) and trpc-to-openapi; each round measures all, ratios pair a target with the
 * same round's bare answer, min / median / max over the rounds. `BENCH_NODE_ARGS` passes Node flags
 * to the server. Then the pieces in one process without sockets, CPU µs per call.
 * Options: --duration-ms N (per target and round, default 2000), --rounds N (default 3),
 * --iterations N and --repeats N (in-process pieces, default 20000 and 5).
 */
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import path from "node:path";
import { parseArgs } from "node:util";
import { initTRPC } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { incomingMessageToRequest } from "@trpc/server/adapters/node-http";
import { z } from "zod";
import { runLoad } from "./lib/load.ts";
import { cpuTimesMs, freePort, startProcess, stopProcess } from "./lib/processes.ts";

const { values } = parseArgs({
  options: {
    "duration-ms": { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
    iterations: { type: "string", default: "20000" },
    repeats: { type: "string", default: "5" },
  },
});
const durationMs = Number(values["duration-ms"]);
const rounds = Number(values.rounds);
const iterations = Number(values.iterations);
const repeats = Number(values.repeats);

// The floor server's procedure (bench/framework-floor-server.ts).
const account = {
  id: "1b1c57a4-5d0e-4d58-9d3c-7f1f4f3a0c11",
  name: "Bench Networks",
  email: "billing@bench.example",
  currency: "eur",
  balance: 0,
  address: { city: null, country: "DE", line1: null, line2: null, postal_code: null, state: null },
  created_at: "2026-11-29 06:00:00",
};
const t = initTRPC.create({ isDev: false });
const router = t.router({
  account: t.router({ get: t.procedure.input(z.void()).query(async () => account) }),
});
const caller = t.createCallerFactory(router)({});
// What the bench's load generator sends (node:http defaults).
const rawHeaders = { host: "127.0.0.1:3000", connection: "keep-alive" };
const url = "http://127.0.0.1:3000/trpc/account.get";
const socket = new Socket();
const fresh = () => {
  const req = new IncomingMessage(socket);
  req.method = "GET";
  req.url = "/trpc/account.get";
  req.headers = { ...rawHeaders };
  return { req, res: new ServerResponse(req) };
};
const sink = () => new WritableStream<Uint8Array>({ write() {} });
const prebuilt = new Request(url, { headers: rawHeaders });

const pieces: Record<string, () => unknown> = {
  "reference: JSON.stringify(account)": () => JSON.stringify(account),
  "reference: new IncomingMessage + ServerResponse": () => fresh(),
  "new AbortController()": () => new AbortController(),
  "AbortSignal.any([a, b])": () => AbortSignal.any([new AbortController().signal, new AbortController().signal]),
  "new URL(req.url, base)": () => new URL("/trpc/account.get", "http://127.0.0.1:3000"),
  "new Headers() + append per header": () => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(rawHeaders)) headers.append(k, v);
    return headers;
  },
  "new Request(url, { headers, signal })": () =>
    new Request(url, { headers: rawHeaders, method: "GET", signal: new AbortController().signal }),
  "incomingMessageToRequest (with fresh req/res)": () => {
    const { req, res } = fresh();
    return incomingMessageToRequest(req, res, { maxBodySize: null });
  },
  "procedure call (createCaller)": () => caller.account.get(),
  "fetchRequestHandler(prebuilt Request)": () => fetchRequestHandler({ endpoint: "/trpc", req: prebuilt, router }),
  "new Response(json, { headers })": () =>
    new Response(JSON.stringify({ result: { data: account } }), {
      status: 200,
      headers: new Headers([
        ["vary", "trpc-accept, accept"],
        ["content-type", "application/json"],
      ]),
    }),
  "response.body.pipeTo(WritableStream)": () =>
    new Response(JSON.stringify({ result: { data: account } })).body?.pipeTo(sink()),
  "reference: response.text()": () => new Response(JSON.stringify({ result: { data: account } })).text(),
};

const spread = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const f = (x: number | undefined) => (x ?? Number.NaN).toFixed(2).padStart(7);
  return `${f(s[0])} / ${f(s[Math.floor((s.length - 1) / 2)])} / ${f(s.at(-1))}`;
};

// Over HTTP: [path, calls per request].
const input = encodeURIComponent("{}");
const targets: Record<string, [string, number]> = {
  "bare Express": ["/bare", 1],
  "procedure (createCaller)": ["/stages/procedure", 1],
  "+ Fetch Request": ["/stages/request", 1],
  "+ fetchRequestHandler, text()": ["/stages/text/account.get", 1],
  "+ body pipeTo(WritableStream)": ["/stages/pipe/account.get", 1],
  "tRPC Express adapter": ["/trpc/account.get", 1],
  "adapter, batch of 1": [`/trpc/account.get?batch=1&input=${input}`, 1],
  "adapter, batch of 2 (per call)": [`/trpc/account.get,account.get?batch=1&input=${input}`, 2],
  "adapter, batch of 4 (per call)": [`/trpc/${Array(4).fill("account.get").join(",")}?batch=1&input=${input}`, 4],
  "trpc-to-openapi": ["/v1/account", 1],
};
const port = await freePort();
const server = await startProcess(
  path.join(import.meta.dirname, "framework-floor-server.ts"),
  { PORT: String(port) },
  `http://127.0.0.1:${port}/healthz`,
);
const perCall: Record<string, number[]> = {};
try {
  for (let round = -1; round < rounds; round++) {
    for (const [name, [target, calls]] of Object.entries(targets)) {
      const before = await cpuTimesMs(server.pid);
      const load = await runLoad(
        name,
        `http://127.0.0.1:${port}${target}`,
        {},
        {
          concurrency: 32,
          durationMs,
          expectStatus: 200,
        },
      );
      const after = await cpuTimesMs(server.pid);
      if (load.errors > 0) throw new Error(`${name}: ${load.errors} failed requests`);
      // Round -1 warms the JIT up and is not counted.
      if (round >= 0)
        perCall[name] = [...(perCall[name] ?? []), ((after.total - before.total) * 1000) / load.requests / calls];
    }
  }
} finally {
  await stopProcess(server);
}
console.log(`Server CPU µs per call over HTTP, 32 connections, ${rounds} rounds of ${durationMs} ms`);
console.log(`${"".padEnd(32)} ${"µs per call".padEnd(25)} x bare Express (same round)`);
const bare = perCall["bare Express"] ?? [];
for (const [name, xs] of Object.entries(perCall))
  console.log(`${name.padEnd(32)} ${spread(xs)}   ${spread(xs.map((x, i) => x / (bare[i] ?? Number.NaN)))}`);

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
console.log(
  `\nIn one process, no sockets: µs CPU per call, min / median / max over ${repeats} repeats of ${iterations} calls`,
);
for (const [name, piece] of Object.entries(pieces)) {
  const run = async () => {
    const started = cpuUs();
    for (let i = 0; i < iterations; i++) {
      const out = piece();
      if (out instanceof Promise) await out;
    }
    return (cpuUs() - started) / iterations;
  };
  await run(); // warm-up: JIT
  const results: number[] = [];
  for (let r = 0; r < repeats; r++) results.push(await run());
  console.log(`${name.padEnd(48)} ${spread(results)}`);
}
