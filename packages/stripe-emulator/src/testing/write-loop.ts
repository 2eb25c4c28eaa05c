// Child process of persistence.test.ts: an emulator on DATA_DIR (argv[2]) creating customers as
// fast as it can, printing each acknowledged sequence number, until it is killed.
import { startStripeEmulator } from "../emulator-server.ts";

const emulator = await startStripeEmulator({ dataDir: process.argv[2] ?? "" });
const start = Number(process.argv[3] ?? 0);
// Padding makes every write large enough that a kill lands inside one.
const padding = "x".repeat(400);
for (let n = start; ; n++) {
  const res = await fetch(`${emulator.url}/v1/customers`, {
    method: "POST",
    headers: { authorization: "Bearer sk_test_loop", "content-type": "application/x-www-form-urlencoded" },
    body: `email=c${n}%40example.com&description=${padding}&metadata[n]=${n}`,
  });
  if (res.status !== 200) throw new Error(`create failed: ${res.status}`);
  await res.arrayBuffer();
  process.stdout.write(`${n}\n`);
}
