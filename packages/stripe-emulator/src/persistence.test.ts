import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type Stripe from "stripe";
import { afterEach, describe, expect, it } from "vitest";
import { startStripeEmulator } from "./emulator-server.ts";
import type { StripeEmulator } from "./emulator-server.ts";
import { LOG_FILE, STATE_FILE } from "./emulator-persistence.ts";
import { EXP_YEAR, sdk } from "./testing/test-emulator.ts";

const dirs: string[] = [];
const running: StripeEmulator[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "stripe-emulator-"));
  dirs.push(dir);
  return dir;
};
const start = async (dataDir: string) => {
  const emulator = await startStripeEmulator({ dataDir });
  running.push(emulator);
  return emulator;
};

afterEach(async () => {
  for (const e of running.splice(0)) await e.close().catch(() => {});
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("state in DATA_DIR", () => {
  it("customers, intents, cards, subscriptions, invoices and ids survive a restart (through the stripe SDK)", async () => {
    const dir = tempDir();
    const first = await start(dir);
    const stripe = sdk(first, "sk_test_a");
    const stripeJs = sdk(first, "pk_test_a");
    const customer = await stripe.customers.create({ email: "keep@example.com", name: "Keep" });
    const intent = await stripe.setupIntents.create({ customer: customer.id });
    const card = await stripeJs.paymentMethods.create({
      type: "card",
      card: { number: "4242424242424242", exp_month: 12, exp_year: EXP_YEAR, cvc: "123" },
    });
    await stripeJs.setupIntents.confirm(intent.id, {
      payment_method: card.id,
      client_secret: intent.client_secret ?? "",
    } as Stripe.SetupIntentConfirmParams);
    await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: card.id } });
    const price = await stripe.prices.create({
      currency: "usd",
      unit_amount: 500,
      recurring: { interval: "month" },
      product_data: { name: "Router" },
    });
    const sub = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: price.id, quantity: 2 }] });
    await first.close();

    const second = await start(dir);
    const again = sdk(second, "sk_test_b");
    expect((await again.customers.retrieve(customer.id)) as { email: string }).toMatchObject({
      email: "keep@example.com",
      invoice_settings: { default_payment_method: card.id },
    });
    expect((await again.setupIntents.retrieve(intent.id)).status).toBe("succeeded");
    const cards = await again.paymentMethods.list({ customer: customer.id, type: "card" });
    expect(cards.data.map((c) => c.id)).toEqual([card.id]);
    const restored = await again.subscriptions.retrieve(sub.id);
    expect(restored.status).toBe("active");
    const invoices = await again.invoices.list({ customer: customer.id });
    expect(invoices.data).toHaveLength(1);
    expect(invoices.data[0]).toMatchObject({ status: "paid", amount_paid: 1000 });
    // The restored price is the same price: an update that changes nothing prorates nothing.
    const item = restored.items.data[0];
    await again.subscriptions.update(sub.id, { items: [{ id: item?.id ?? "", price: price.id, quantity: 2 }] });
    expect((await again.invoiceItems.list({ customer: customer.id })).data).toEqual([]);
    // Ids keep counting: nothing new collides with what was restored.
    const next = await again.customers.create({ email: "new@example.com" });
    expect(next.id).not.toBe(customer.id);
    expect(second.store.idCounter).toBeGreaterThan(first.store.idCounter);
  });

  it("a change writes what it touched, not the whole state: the cost per change does not grow with the objects", async () => {
    const dir = tempDir();
    const emulator = await start(dir);
    const stripe = sdk(emulator, "sk_test_grow");
    const blob = "x".repeat(200);
    const create = (n: number) => stripe.customers.create({ email: `c${n}@example.com`, metadata: { n, blob } });
    const logBytes = () => statSync(join(dir, LOG_FILE)).size;
    const appended = async (n: number) => {
      const before = logBytes();
      await create(n);
      return logBytes() - before;
    };
    const snapshot = readFileSync(join(dir, STATE_FILE), "utf8");
    const first = await appended(0);
    for (let n = 1; n < 300; n++) await create(n);
    const later = await appended(300);
    // The 301st customer costs what the first did (its own object and event), not 300 customers' worth.
    expect(later).toBeLessThanOrEqual(first + 200);
    // The snapshot was not rewritten (about 500 KiB of log: under the compaction point).
    expect(readFileSync(join(dir, STATE_FILE), "utf8")).toBe(snapshot);
    // Keep going until the log outgrows the snapshot and 1 MiB: it is folded into a new snapshot.
    let n = 301;
    while (readFileSync(join(dir, STATE_FILE), "utf8") === snapshot) await create(n++);
    expect(logBytes()).toBeLessThan(10_000);
    await create(n++);
    await emulator.close();
    // Snapshot plus log: everything is back after a restart, ids keep counting.
    const again = await start(dir);
    const seen = [...again.store.customers.values()].map((c) => Number(c.metadata.n)).sort((a, b) => a - b);
    expect(seen).toEqual(seen.map((_, i) => i));
    expect(seen).toHaveLength(n);
    const next = await sdk(again, "sk_test_grow").customers.create({ email: "next@example.com" });
    expect(again.store.customers.has(next.id)).toBe(true);
  }, 120_000);

  it("DATA_DIR=memory writes nothing", async () => {
    const emulator = await startStripeEmulator({ dataDir: "memory" });
    running.push(emulator);
    await sdk(emulator, "sk_test_m").customers.create({ email: "m@example.com" });
    expect(readdirSync(process.cwd())).not.toContain(STATE_FILE);
  });

  it("listens on loopback only", async () => {
    await expect(startStripeEmulator({ host: "0.0.0.0" })).rejects.toThrow(/loopback only/);
    await expect(startStripeEmulator({ host: "::" })).rejects.toThrow(/loopback only/);
    const emulator = await startStripeEmulator({});
    running.push(emulator);
    expect(emulator.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("an emulator killed with SIGKILL while writing restarts with the last complete state", async () => {
    const dir = tempDir();
    const script = fileURLToPath(new URL("./testing/write-loop.ts", import.meta.url));
    let acknowledged = -1;
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [script, dir, "0"], { stdio: ["ignore", "pipe", "inherit"] });
      let buffer = "";
      child.stdout.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split("\n");
        buffer = lines.pop() ?? "";
        for (const line of lines) acknowledged = Number(line);
        // Killed while it keeps writing: most of its time is spent inside a write.
        if (acknowledged >= 150 && !child.killed) child.kill("SIGKILL");
      });
      child.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`exit ${signal}`))));
      child.on("error", reject);
    });
    expect(acknowledged).toBeGreaterThanOrEqual(150);
    // The file is whole JSON, whatever the moment of the kill.
    expect(() => JSON.parse(readFileSync(join(dir, STATE_FILE), "utf8"))).not.toThrow();

    const reopened = await start(dir);
    const seen = [...reopened.store.customers.values()].map((c) => Number(c.metadata.n)).sort((a, b) => a - b);
    // Every acknowledged customer is there, in order with no gap; at most the one in flight beyond.
    expect(seen.length).toBeGreaterThanOrEqual(acknowledged + 1);
    expect(seen.length).toBeLessThanOrEqual(acknowledged + 2);
    expect(seen).toEqual(seen.map((_, i) => i));
    expect(reopened.store.idCounter).toBeGreaterThanOrEqual(seen.length);
    // And it keeps working from there.
    const more = await sdk(reopened, "sk_test_k").customers.create({ email: "after@example.com" });
    expect(reopened.store.customers.has(more.id)).toBe(true);
  });
});
