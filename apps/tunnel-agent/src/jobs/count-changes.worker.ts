import { parentPort, workerData } from "node:worker_threads";
import { diffLines } from "diff";
import type { CountJob, CountReply } from "./count-changes.ts";
import { countLinesMultiset } from "./line-counts.ts";

// One line count in a thread of its own (count-changes.ts): jsdiff is quadratic on very different
// texts; past its own timeout the linear count answers, still off the agent's event loop.
const job = workerData as CountJob;
const parts = diffLines(job.previous, job.next, { timeout: job.timeoutMs });
let changes = { added: 0, removed: 0 };
if (parts) {
  for (const part of parts) {
    if (part.added) changes.added += part.count;
    else if (part.removed) changes.removed += part.count;
  }
} else {
  changes = countLinesMultiset(job.previous, job.next);
}
const reply: CountReply = { ok: true, value: changes };
parentPort?.postMessage(reply);
