import pino from "pino";

/** Bytes of log lines gathered before one write to stdout (about twenty request lines). */
export const LOG_BATCH_BYTES = 4096;
/** Longest time a gathered line waits for its write (a quiet process still logs within this). */
export const LOG_FLUSH_MS = 250;

/**
 * The API's stdout for its JSON log lines (docs/operations.md "Benchmarks", the log line): pino's
 * default destination writes each line on its own through libuv's thread pool as soon as the
 * previous write is done, so under load most request lines cost a write, a thread-pool hop and the
 * event-loop wake-up that reports it. This one gathers lines until `LOG_BATCH_BYTES` (or for at
 * most `LOG_FLUSH_MS`) and writes them at once, still off the event loop: a stdout reader that
 * stalls (a log collector) never blocks a request. What is gathered is written on exit (pino
 * registers the stream for it), so a graceful stop or a crash that reaches `exit` loses nothing;
 * a SIGKILL can lose up to `LOG_FLUSH_MS` of lines, which pino's default can too, for less time.
 */
export const batchedStdout = (): pino.DestinationStream =>
  pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS });
