import { parentPort, workerData } from "node:worker_threads";

// worker-runner.test.ts: answers a number doubled, fails on "fail", spins forever on "spin", and
// with a shared flag spins until the test sets it (then answers 0).
const input = workerData as number | "fail" | "spin" | { flag: Int32Array };
if (input === "spin") for (;;);
if (typeof input === "object") {
  while (Atomics.load(input.flag, 0) === 0);
  parentPort?.postMessage({ ok: true, value: 0 });
} else {
  parentPort?.postMessage(
    input === "fail" ? { ok: false, message: "planted failure" } : { ok: true, value: input * 2 },
  );
}
