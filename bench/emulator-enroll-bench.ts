/**
 * `npm run bench:emulator`: the built-in Stripe emulator's side of enrolling routers, on its
 * embedded default (state in a DATA_DIR, not memory). Per enrollment, what the API asks of the
 * processor (apps/api/src/integrations/stripe/subscription-gateway.ts): the subscription's
 * quantity + 1 with prorations and an idempotency key, then the customer's subscriptions listed.
 * Issue 40 measured 24.6 min for 5,000 enrollments when every change rewrote the whole state file.
 * Prints the total, p50/p99 per enrollment, per 1,000, and the state's size on disk.
 * Options: --routers N (default 5000).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startStripeEmulator } from "@fleet/stripe-emulator";
import Stripe from "stripe";

const { values } = parseArgs({ options: { routers: { type: "string", default: "5000" } } });
const ROUTERS = Number(values.routers);
const dir = mkdtempSync(join(tmpdir(), "emulator-bench-"));
const emulator = await startStripeEmulator({ dataDir: dir });
const stripe = new Stripe("sk_test_bench", { host: "127.0.0.1", port: emulator.port, protocol: "http" });

const customer = await stripe.customers.create({ email: "bench@example.com", name: "Bench Networks" });
const card = await stripe.paymentMethods.attach("pm_card_visa", { customer: customer.id });
await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: card.id } });
const price = await stripe.prices.create({
  currency: "eur",
  unit_amount: 500,
  recurring: { interval: "month" },
  product_data: { name: "Router" },
});
const sub = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: price.id, quantity: 1 }] });
const itemId = sub.items.data[0]?.id ?? "";

const times: number[] = [];
const started = performance.now();
let lap = started;
for (let n = 2; n <= ROUTERS + 1; n++) {
  const t = performance.now();
  await stripe.subscriptions.update(
    sub.id,
    { items: [{ id: itemId, quantity: n }], proration_behavior: "create_prorations" },
    { idempotencyKey: `subscription-quantity:${sub.id}:${crypto.randomUUID()}` },
  );
  await stripe.subscriptions.list({ customer: customer.id, status: "all", limit: 100 });
  times.push(performance.now() - t);
  if ((n - 1) % 1000 === 0) {
    console.log(`${n - 1} enrollments: last 1,000 in ${((performance.now() - lap) / 1000).toFixed(1)} s`);
    lap = performance.now();
  }
}
const totalS = (performance.now() - started) / 1000;
const sorted = [...times].sort((a, b) => a - b);
const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1);
const bytes = readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
console.log(
  `${ROUTERS} enrollments in ${totalS.toFixed(1)} s (${(totalS / 60).toFixed(2)} min); ` +
    `per enrollment p50 ${at(0.5)} ms, p99 ${at(0.99)} ms; state on disk ${(bytes / 1e6).toFixed(1)} MB`,
);
await emulator.close();
rmSync(dir, { recursive: true, force: true });
