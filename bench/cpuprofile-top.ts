/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`, or `BENCH_CPU_PROF=<dir>` for the heartbeat
 * bench's daemon processes): the functions with the most self time, and the same grouped by file.
 * `node bench/cpuprofile-top.ts <file.cpuprofile> [top=25] [from-s to-s]`: with a window, only the
 * samples taken between from-s and to-s seconds after the profile started count (the timeline it
 * prints, busy time per 10 s, shows where the measured phase was).
 */
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const file = process.argv[2];
if (!file) throw new Error("usage: cpuprofile-top.ts <file.cpuprofile> [top]");
const top = Number(process.argv[3] ?? 25);
const fromUs = process.argv[4] === undefined ? Number.NEGATIVE_INFINITY : Number(process.argv[4]) * 1e6;
const toUs = process.argv[5] === undefined ? Number.POSITIVE_INFINITY : Number(process.argv[5]) * 1e6;
const profile = JSON.parse(readFileSync(file, "utf8")) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
};
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
const busyPer10s: number[] = [];
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i] as number;
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  const bucket = Math.floor(at / 10e6);
  if (byId.get(id)?.callFrame.functionName !== "(idle)") busyPer10s[bucket] = (busyPer10s[bucket] ?? 0) + delta;
  if (at < fromUs || at > toUs) continue;
  self.set(id, (self.get(id) ?? 0) + delta);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const short = (url: string) =>
  url.replace(/^file:\/\/.*?\/(node_modules|apps|packages)\//, "$1/").replace(/^node:/, "");
const fns = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, us] of self) {
  const f = byId.get(id)?.callFrame;
  if (!f) continue;
  const key = `${f.functionName || "(anonymous)"} ${short(f.url)}:${f.lineNumber + 1}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  const group = f.url ? (short(f.url).split(":")[0] ?? f.url) : f.functionName;
  files.set(group, (files.get(group) ?? 0) + us);
}
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
console.log(
  `busy ms per 10 s from the start: ${Array.from(busyPer10s, (us, i) => `${i * 10}s:${((us ?? 0) / 1000).toFixed(0)}`).join(" ")}`,
);
print("self time by function", fns);
print("self time by file", files);
