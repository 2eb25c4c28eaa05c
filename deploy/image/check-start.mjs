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
const read = (chunk) => {
  out += chunk.toString();
  if (!signalled && /listening"|Fleet is running/.test(out)) {
    signalled = true;
    process.stdout.write(`check-start: ${args[0]} listening after ${Date.now() - started} ms; SIGTERM\n`);
    child.kill("SIGTERM");
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
