// @fleet/stripe-emulator: an in-memory, Stripe-compatible HTTP API for dev, tests and demos.
export { startStripeEmulator } from "./emulator-server.ts";
export type { StripeEmulator, StripeEmulatorOptions } from "./emulator-server.ts";
export { EmulatorStore } from "./emulator-store.ts";
export type { EmulatorClock, StoreOptions } from "./emulator-store.ts";
export { MAGIC_PAYMENT_METHODS, brandOf, luhnValid } from "./card-catalog.ts";
export type * from "./stripe-types.ts";
