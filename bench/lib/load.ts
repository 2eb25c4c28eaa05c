import http from "node:http";

export interface LoadResult {
  label: string;
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

/**
 * A closed-loop HTTP load generator: `concurrency` keep-alive connections each sending the next
 * request when the previous answer arrives, for `durationMs`. Latencies in milliseconds.
 */
export const runLoad = async (
  label: string,
  url: string,
  headers: Record<string, string>,
  options: { concurrency: number; durationMs: number; expectStatus: number },
): Promise<LoadResult> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + options.durationMs;
  const one = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          method: "GET",
          headers,
          agent,
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode === options.expectStatus) latencies.push(performance.now() - started);
            else errors++;
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end();
    });
  const worker = async () => {
    while (performance.now() < deadline) await one();
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pick = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return {
    label,
    requests: latencies.length,
    errors,
    rps: latencies.length / elapsed,
    p50: pick(0.5),
    p99: pick(0.99),
  };
};

export const formatRow = (r: LoadResult): string =>
  `${r.label.padEnd(22)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms   errors ${r.errors}`;
