import { Worker } from "node:worker_threads";

/** The computation ran past its time and its thread was stopped. */
export class WorkerTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`the computation did not finish within ${timeoutMs} ms`);
    this.name = "WorkerTimeoutError";
  }
}

/** Every thread is busy and the waiting line is full. */
export class WorkerBusyError extends Error {
  constructor() {
    super("every worker thread is busy");
    this.name = "WorkerBusyError";
  }
}

export interface WorkerRunnerOptions {
  /** Wall time of one run, from its thread's start; past it the thread is terminated. */
  timeoutMs: number;
  /** Threads running at once in this process (the machine's cores are the heartbeats' too). */
  maxRunning: number;
  /** Runs waiting for a thread; one more is refused with `WorkerBusyError`. */
  maxWaiting: number;
  /** Heap of one thread, in MiB. */
  maxHeapMb?: number;
}

/** What a worker module posts back: `{ ok: true, value }` or `{ ok: false, message }`. */
export type WorkerReply<O> = { ok: true; value: O } | { ok: false; message: string };

/**
 * Runs CPU-heavy work on outside data (a diff of two router exports) in a fresh worker thread per
 * run, so the event loop that answers heartbeats and API calls never waits for it
 * (docs/api.md "Configuration backups"). The module at `url` reads `workerData` as its input and
 * posts one `WorkerReply`. Bounded three ways: time (terminated at `timeoutMs`), threads at once,
 * and the waiting line.
 */
export class WorkerRunner<I, O> {
  readonly #url: URL;
  readonly #o: WorkerRunnerOptions;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(url: URL, options: WorkerRunnerOptions) {
    this.#url = url;
    this.#o = options;
  }

  async run(input: I): Promise<O> {
    if (this.#running >= this.#o.maxRunning) {
      if (this.#waiting.length >= this.#o.maxWaiting) throw new WorkerBusyError();
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#running++;
    try {
      return await this.#spawn(input);
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }

  #spawn(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const worker = new Worker(this.#url, {
        workerData: input,
        resourceLimits: { maxOldGenerationSizeMb: this.#o.maxHeapMb ?? 256 },
        stdout: false,
        stderr: false,
      });
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
        void worker.terminate();
      };
      const timer = setTimeout(
        () => settle(() => reject(new WorkerTimeoutError(this.#o.timeoutMs))),
        this.#o.timeoutMs,
      );
      worker.once("message", (reply: WorkerReply<O>) =>
        settle(() => (reply.ok ? resolve(reply.value) : reject(new Error(reply.message)))),
      );
      worker.once("error", (error) => settle(() => reject(error)));
      worker.once("exit", (code) =>
        settle(() => reject(new Error(`the worker thread exited (${code}) without an answer`))),
      );
    });
  }
}
