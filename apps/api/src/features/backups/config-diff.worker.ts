import { parentPort, workerData } from "node:worker_threads";
import { createTwoFilesPatch } from "diff";
import type { DiffJob, DiffReply } from "./config-diff.ts";

// One diff in a thread of its own (config-diff.ts): jsdiff is quadratic on very different texts,
// and its own timeout stops it here before the runner has to terminate the thread.
const job = workerData as DiffJob;
const patch = createTwoFilesPatch(job.oldName, job.newName, job.oldText, job.newText, job.oldHeader, job.newHeader, {
  timeout: job.timeoutMs,
});
const reply: DiffReply = { ok: true, value: patch ?? null };
parentPort?.postMessage(reply);
