/**
 * `npm run bench:relay`: the transient-forward data path (client -> entry-point relay -> simulated
 * router's dst-nat relay -> LAN device) against a direct loopback TCP connection to the same LAN
 * device, in the same run. The relay and the router run in their own processes, like in production;
 * the client and the LAN devices are this process in both cases, so only the path differs.
 * Measures: a single 100 MB transfer (throughput), connection set-up latency (connect + PROXY
 * header + first echoed byte), and 200 concurrent forwarded connections. Prints ratios.
 * With `--tunnel` (root and wireguard-go), in the same run: the same relay (a second agent process)
 * forwarding to a router reached through a real WireGuard tunnel (bench/relay-bench-tunnel.ts),
 * against the forward to the router over loopback; min/median/max over the rounds.
 * Options: --mb N (default 100), --rounds N (default 3), --latency-samples N (default 200),
 * --concurrent N (default 200), --tunnel.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import net from "node:net";
import { cpus } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { proxyV1Header } from "@fleet/tunnel-agent";
import { realTunnelUnavailable } from "@fleet/tunnel-agent/wireguard/testing/wireguard-environment";
import { type BenchTunnel, startBenchTunnel } from "./relay-bench-tunnel.ts";

const { values } = parseArgs({
  options: {
    mb: { type: "string", default: "100" },
    rounds: { type: "string", default: "3" },
    "latency-samples": { type: "string", default: "200" },
    concurrent: { type: "string", default: "200" },
    tunnel: { type: "boolean", default: false },
  },
});
if (values.tunnel) {
  const unavailable = realTunnelUnavailable();
  if (unavailable) {
    process.stderr.write(`bench:relay --tunnel needs root and wireguard-go: ${unavailable}\n`);
    process.exit(1);
  }
}
const BYTES = Number(values.mb) * 1024 * 1024;
const ROUNDS = Number(values.rounds);
const SAMPLES = Number(values["latency-samples"]);
const CONCURRENT = Number(values.concurrent);
const TUNNEL_IP = "127.0.0.250";
const here = import.meta.dirname;

// The LAN devices: a sink that answers its byte count when the sender is done, and an echo.
const sink = net.createServer({ allowHalfOpen: true }, (socket) => {
  let n = 0;
  socket.on("data", (chunk: Buffer) => {
    n += chunk.length;
  });
  socket.on("end", () => socket.end(String(n)));
  socket.on("error", () => socket.destroy());
});
const echo = net.createServer((socket) => {
  socket.on("error", () => socket.destroy());
  socket.pipe(socket);
});
const listen = async (server: net.Server, host = "127.0.0.1", port = 0) => {
  server.listen(port, host);
  await once(server, "listening");
  return (server.address() as net.AddressInfo).port;
};
const sinkPort = await listen(sink);
const echoPort = await listen(echo);

const probe = net.createServer();
const sshPort = await listen(probe, TUNNEL_IP);
await new Promise((resolve) => probe.close(resolve));

const children: ChildProcess[] = [];
const child = async (script: string, args: string[], namespace?: string): Promise<string> => {
  const argv = [path.join(here, script), ...args];
  const proc = namespace
    ? spawn("ip", ["netns", "exec", namespace, process.execPath, ...argv], { stdio: ["ignore", "pipe", "inherit"] })
    : spawn(process.execPath, argv, { stdio: ["ignore", "pipe", "inherit"] });
  children.push(proc);
  let out = "";
  proc.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  const deadline = Date.now() + 60_000;
  while (!out.includes("\n")) {
    if (proc.exitCode !== null) throw new Error(`${script} exited with ${proc.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${script} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return out.trim();
};
const stopChildren = () => {
  for (const proc of children) if (proc.exitCode === null) proc.kill("SIGTERM");
};
process.once("exit", stopChildren);

await child("relay-bench-router.ts", [TUNNEL_IP, String(sshPort), String(sinkPort), String(echoPort)]);
const ports = JSON.parse(await child("relay-bench-agent.ts", [TUNNEL_IP, String(sshPort)])) as {
  sink: number;
  echo: number;
};
const pipePort = Number(await child("relay-bench-pipe.ts", [String(sinkPort)]));

// --tunnel: the same relay code in a second agent, whose router sits behind a real WireGuard tunnel.
let tunnel: BenchTunnel | undefined;
let tunnelled: { sink: number; echo: number } | undefined;
if (values.tunnel) {
  tunnel = await startBenchTunnel();
  const opened = tunnel;
  process.once("exit", () => {
    // Synchronous last resort (a crash); the normal end awaits close() below.
    void opened.close();
  });
  try {
    await child("relay-bench-router.ts", [tunnel.routerIp, "22", "0", "0"], tunnel.namespace);
    tunnelled = JSON.parse(
      await child("relay-bench-agent.ts", [tunnel.routerIp, "22", tunnel.network, "49600-49699"]),
    ) as { sink: number; echo: number };
  } catch (error) {
    stopChildren();
    await tunnel.close();
    throw error;
  }
}

const header = (port: number) => proxyV1Header({ address: "8.8.8.8", port: 50_000 }, { address: "127.0.0.1", port });

/** Sends BYTES with backpressure and waits for the sink's count; answers MB/s. */
const transfer = async (port: number, viaEntryPoint: boolean): Promise<number> => {
  const started = process.hrtime.bigint();
  const socket = net.connect({ host: "127.0.0.1", port });
  await once(socket, "connect");
  if (viaEntryPoint) socket.write(header(port));
  let reply = "";
  socket.on("data", (chunk: Buffer) => {
    reply += chunk.toString();
  });
  const closed = once(socket, "close");
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  for (let sent = 0; sent < BYTES; sent += chunk.length) {
    if (!socket.write(chunk)) await once(socket, "drain");
  }
  socket.end();
  await closed;
  if (Number(reply) !== BYTES) throw new Error(`sink received ${reply} of ${BYTES} bytes`);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return BYTES / 1024 / 1024 / seconds;
};

/** Connect, (PROXY header,) one byte out and back: the time until a session can start. */
const setup = async (port: number, viaEntryPoint: boolean): Promise<number> => {
  const started = process.hrtime.bigint();
  const socket = net.connect({ host: "127.0.0.1", port });
  socket.setNoDelay(true);
  await once(socket, "connect");
  socket.write(viaEntryPoint ? Buffer.concat([header(port), Buffer.from("x")]) : "x");
  await once(socket, "data");
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  socket.destroy();
  return ms;
};

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const median = (values: number[]) => percentile(values, 50);

/** N connections at once through the entry point, each echoing 16 KiB; answers the errors. */
const concurrent = async (n: number): Promise<{ errors: number; ms: number }> => {
  const payload = Buffer.alloc(16 * 1024, 0x62);
  const started = process.hrtime.bigint();
  const results = await Promise.allSettled(
    Array.from({ length: n }, async () => {
      const socket = net.connect({ host: "127.0.0.1", port: ports.echo });
      try {
        await once(socket, "connect");
        socket.write(Buffer.concat([header(ports.echo), payload]));
        let got = 0;
        await new Promise<void>((resolve, reject) => {
          socket.on("data", (chunk: Buffer) => {
            got += chunk.length;
            if (got >= payload.length) resolve();
          });
          socket.on("error", reject);
          socket.on("close", () =>
            got >= payload.length ? resolve() : reject(new Error(`closed after ${got} bytes`)),
          );
        });
        if (got !== payload.length) throw new Error(`echoed ${got} bytes`);
      } finally {
        socket.destroy();
      }
    }),
  );
  const errors = results.filter((r) => r.status === "rejected").length;
  return { errors, ms: Number(process.hrtime.bigint() - started) / 1e6 };
};

const line = (text: string) => process.stdout.write(`${text}\n`);
const fmt = (n: number, digits = 1) => n.toFixed(digits);

line(
  `relay bench: ${values.mb} MB transfers x ${ROUNDS}, ${SAMPLES} set-up samples, ${CONCURRENT} concurrent connections`,
);
line("path: client -> entry point 127.0.0.1 (PROXY v1) -> simulated router 127.0.0.250 (dst-nat) -> LAN device");
line(`machine: ${cpus().length} CPUs; client and LAN devices in this process, relay and router in their own`);

const direct: number[] = [];
const piped: number[] = [];
const relayed: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  direct.push(await transfer(sinkPort, false));
  piped.push(await transfer(pipePort, false));
  relayed.push(await transfer(ports.sink, true));
}
const directMBs = median(direct);
const pipedMBs = median(piped);
const relayedMBs = median(relayed);
const rounds = (v: number[]) => `[${v.map((x) => fmt(x)).join(", ")}]`;
line(
  `throughput  direct ${fmt(directMBs)} MB/s   one bare pipe hop ${fmt(pipedMBs)} MB/s   forwarded ${fmt(relayedMBs)} MB/s`,
);
line(
  `            ratio forwarded/direct ${fmt(relayedMBs / directMBs, 2)} (target >= 0.70)   forwarded/bare hop ${fmt(relayedMBs / pipedMBs, 2)}   bare hop/direct ${fmt(pipedMBs / directMBs, 2)}`,
);
line(`            rounds direct ${rounds(direct)} bare hop ${rounds(piped)} forwarded ${rounds(relayed)}`);

const directSetup: number[] = [];
const relayedSetup: number[] = [];
for (let i = 0; i < SAMPLES; i++) {
  directSetup.push(await setup(echoPort, false));
  relayedSetup.push(await setup(ports.echo, true));
}
line(
  `set-up      direct p50 ${fmt(median(directSetup), 3)} ms p95 ${fmt(percentile(directSetup, 95), 3)} ms   ` +
    `forwarded p50 ${fmt(median(relayedSetup), 3)} ms p95 ${fmt(percentile(relayedSetup, 95), 3)} ms   ` +
    `ratio p50 ${fmt(median(relayedSetup) / median(directSetup), 2)}`,
);

if (tunnelled) {
  const via = tunnelled;
  const mmm = (v: number[], digits = 1) => {
    const sorted = [...v].sort((a, b) => a - b);
    return `min ${fmt(sorted[0] ?? Number.NaN, digits)} / median ${fmt(median(v), digits)} / max ${fmt(sorted.at(-1) ?? Number.NaN, digits)}`;
  };
  const loop: number[] = [];
  const wg: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    loop.push(await transfer(ports.sink, true));
    wg.push(await transfer(via.sink, true));
  }
  const loopSetup: number[] = [];
  const wgSetup: number[] = [];
  const roundLoop: number[] = [];
  const roundWg: number[] = [];
  const perRound = Math.max(1, Math.floor(SAMPLES / ROUNDS));
  for (let round = 0; round < ROUNDS; round++) {
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < perRound; i++) {
      a.push(await setup(ports.echo, true));
      b.push(await setup(via.echo, true));
    }
    loopSetup.push(...a);
    wgSetup.push(...b);
    roundLoop.push(median(a));
    roundWg.push(median(b));
  }
  line("tunnel      the same relay forwarding to a router behind a real WireGuard tunnel (wireguard-go at both ends,");
  line(
    "            router in its own network namespace, its LAN devices in its own process) against the forward over loopback",
  );
  line(`  throughput over loopback MB/s ${mmm(loop)}   through the tunnel MB/s ${mmm(wg)}`);
  line(`             ratio tunnel/loopback (medians) ${fmt(median(wg) / median(loop), 2)}`);
  line(
    `  set-up p50 per round, ms: over loopback ${mmm(roundLoop, 3)}   through the tunnel ${mmm(roundWg, 3)}   ` +
      `(all ${loopSetup.length} samples: p95 ${fmt(percentile(loopSetup, 95), 3)} vs ${fmt(percentile(wgSetup, 95), 3)} ms)`,
  );
  line(`             ratio tunnel/loopback (median of p50s) ${fmt(median(roundWg) / median(roundLoop), 2)}`);
}

const load = await concurrent(CONCURRENT);
line(`concurrent  ${CONCURRENT} forwarded connections echoing 16 KiB: ${load.errors} errors in ${fmt(load.ms)} ms`);

stopChildren();
await tunnel?.close();
sink.close();
echo.close();
process.exitCode = load.errors === 0 ? 0 : 1;
