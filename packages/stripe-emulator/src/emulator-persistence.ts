// The emulator's state on disk: one JSON file in DATA_DIR, replaced atomically after every change.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import type { EmulatorStore } from "./emulator-store.ts";

/** File name of the state inside DATA_DIR. */
export const STATE_FILE = "stripe-emulator.json";
const VERSION = 1;

type MapKey =
  | "customers"
  | "paymentMethods"
  | "cardBehaviors"
  | "setupIntents"
  | "products"
  | "prices"
  | "invoiceItems"
  | "invoices"
  | "subscriptions"
  | "idempotency";

const MAPS: MapKey[] = [
  "customers",
  "paymentMethods",
  "cardBehaviors",
  "setupIntents",
  "products",
  "prices",
  "invoiceItems",
  "invoices",
  "subscriptions",
  "idempotency",
];

/** Everything the store holds, as plain JSON. */
export const serializeStore = (store: EmulatorStore): string => {
  const state: Record<string, unknown> = {
    version: VERSION,
    idCounter: store.idCounter,
    deletedCustomers: [...store.deletedCustomers],
    outbox: store.outbox,
  };
  for (const key of MAPS) state[key] = [...(store[key] as Map<string, unknown>).entries()];
  return JSON.stringify(state);
};

export const restoreStore = (store: EmulatorStore, text: string): void => {
  const state = JSON.parse(text) as Record<string, unknown>;
  if (state.version !== VERSION) throw new Error(`unsupported emulator state version ${String(state.version)}`);
  store.idCounter = Number(state.idCounter) || 0;
  for (const id of (state.deletedCustomers as string[]) ?? []) store.deletedCustomers.add(id);
  store.outbox = (state.outbox as EmulatorStore["outbox"]) ?? [];
  for (const key of MAPS) {
    const map = store[key] as Map<string, unknown>;
    for (const [id, value] of (state[key] as Array<[string, unknown]>) ?? []) map.set(id, value);
  }
};

/**
 * Write a temporary file, fsync it, rename it over the state file, fsync the directory: a crash at
 * any point leaves either the previous state or the new one, never a torn file.
 */
export const writeFileAtomic = (file: string, data: string): void => {
  const temp = `${file}.${process.pid}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  try {
    const dir = openSync(dirname(file), "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch {
    // Some file systems refuse fsync on a directory; the rename itself is still atomic.
  }
};

/** Loads the state of `dataDir` into `store` (nothing there: a fresh store); returns the saver. */
export const openStateFile = (store: EmulatorStore, dataDir: string): (() => void) => {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, STATE_FILE);
  let text: string | undefined;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (text !== undefined) restoreStore(store, text);
  return () => writeFileAtomic(file, serializeStore(store));
};
