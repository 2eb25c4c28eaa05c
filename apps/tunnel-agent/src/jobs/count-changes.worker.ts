import { parentPort, workerData } from "node:worker_threads";
import { diffLines } from "diff";
import type { CountJob, CountReply } from "./count-changes.ts";
import { countDiffParts, countLinesMultiset } from "./line-counts.ts";

// One line count in a thread of its own (count-changes.ts): jsdiff is quadratic on very different
// texts; past its own timeout the linear count answers, still off the agent's event loop.
const job = workerData as CountJob;
const parts = diffLines(job.previous, job.next, { timeout: job.timeoutMs });
const changes = parts ? countDiffParts(parts) : countLinesMultiset(job.previous, job.next);
const reply: CountReply = { ok: true, value: changes };
parentPort?.postMessage(reply);
