// Starts one app the way the image does (`node <CMD>`), waits for its "listening" line (the
// all-in-one: its "Fleet is running" banner), sends
// SIGTERM to that one process and expects the graceful path: a "shutting down" line and exit 0.
// build-image.sh runs it inside each built image with `buildah run` (containers cannot be started
// on these machines); usage: node check-start.mjs <entry file> [args...]
import { spawn } from "node:child_process";

const args = process.argv.slice(2);
const started = Date.now();
const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
let out = "";
let signalled = false;
const give = setTimeout(() => {
  process.stderr.write(`check-start: no "listening" line from ${args.join(" ")} within 180 s\n`);
  child.kill("SIGKILL");
}, 180_000);
// The app installs its SIGTERM handler synchronously after its "listening" line; a signal in
// between would meet the default action. Once it answers /livez, that code has run.
const base = (text) => {
  const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(text)?.[1];
  const port = /"port":(\d+)/.exec(text)?.[1];
  return url ?? (port ? `http://127.0.0.1:${port}` : undefined);
};
let waiting = false;
const terminateWhenLive = async (url) => {
  while (child.exitCode === null) {
    const live = await fetch(`${url}/livez`).then(
      (r) => r.ok,
      () => false,
    );
    if (live) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  signalled = true;
  process.stdout.write(`check-start: ${args[0]} live after ${Date.now() - started} ms; SIGTERM\n`);
  child.kill("SIGTERM");
};
const read = (chunk) => {
  out += chunk.toString();
  const line = /listening"|Fleet is running/.exec(out);
  if (!waiting && line && base(out.slice(line.index > 400 ? line.index - 400 : 0))) {
    waiting = true;
    void terminateWhenLive(base(out.slice(line.index > 400 ? line.index - 400 : 0)));
  }
};
child.stdout.on("data", read);
child.stderr.on("data", read);
child.on("exit", (code, signal) => {
  clearTimeout(give);
  const graceful = signalled && code === 0 && /shutting down/.test(out);
  process.stdout.write(
    `check-start: ${args[0]} exited ${code ?? signal} ${Date.now() - started} ms after start: ${graceful ? "graceful" : "NOT graceful"}\n`,
  );
  if (!graceful) process.stdout.write(out.slice(-4000));
  process.exit(graceful ? 0 : 1);
});
