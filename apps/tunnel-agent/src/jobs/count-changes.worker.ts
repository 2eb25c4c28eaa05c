import { parentPort, workerData } from "node:worker_threads";
import { diffLines } from "diff";
import type { CountJob, CountReply } from "./count-changes.ts";

// One line count in a thread of its own (count-changes.ts): jsdiff is quadratic on very different
// texts, and its own timeout stops it here before the runner has to terminate the thread.
const job = workerData as CountJob;
const parts = diffLines(job.previous, job.next, { timeout: job.timeoutMs });
let reply: CountReply = { ok: true, value: null };
if (parts) {
  let added = 0;
  let removed = 0;
  for (const part of parts) {
    if (part.added) added += part.count;
    else if (part.removed) removed += part.count;
  }
  reply = { ok: true, value: { added, removed } };
}
parentPort?.postMessage(reply);
