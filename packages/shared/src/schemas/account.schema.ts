import { z } from "zod";
import { isIsoCountryCode } from "../rules/countries.ts";
import { stringError, textRule } from "../rules/text-rules.ts";

/** docs/api.md "Limits": account field lengths. Exported so tests probe the exact edges. */
export const ACCOUNT_LIMITS = {
  name: 100,
  email: 250,
  city: 50,
  state: 50,
  line1: 100,
  line2: 100,
  postal_code: 10,
} as const;

// Every text field carries the text rule (docs/api.md "Errors"): no control characters, no lone surrogates.
const text = (max: number) =>
  textRule(z.string({ error: stringError }).max(max, { error: `must be at most ${max} characters` }));

const required = (max: number) => text(max).min(1, { error: "is required and cannot be empty" });

const country = textRule(z.string({ error: stringError }))
  // The JSON Schema of /openapi.json: two letters, any case (the code is upper-cased, then checked).
  .meta({ pattern: "^[A-Za-z]{2}$" })
  .transform((value) => value.toUpperCase())
  .refine(isIsoCountryCode, { error: "must be a two-letter ISO 3166-1 alpha-2 country code" });

// Length is checked on what the user sent; the address is then stored lowercased (docs/api.md).
const email = text(ACCOUNT_LIMITS.email)
  .min(1, { error: "is required and cannot be empty" })
  .meta({ format: "email" })
  .pipe(z.email({ error: "must be a valid email address" }))
  .transform((value) => value.toLowerCase());

/** POST /v1/account. Only name, email and address.country are read; anything else is ignored. */
export const ZCreateAccountInput = z.object({
  name: required(ACCOUNT_LIMITS.name),
  email,
  // A missing address reports `address.country` as the missing field, not `address`.
  address: z.preprocess(
    (value) => (value === undefined ? {} : value),
    z.object({ country }, { error: "must be an object" }),
  ),
});
export type TCreateAccountInput = z.infer<typeof ZCreateAccountInput>;

/** PATCH/PUT /v1/account. Every field optional; an empty string unsets an optional field. */
export const ZUpdateAccountInput = z.object({
  name: required(ACCOUNT_LIMITS.name).optional(),
  email: email.optional(),
  address: z
    .object(
      {
        city: text(ACCOUNT_LIMITS.city).optional(),
        country: country.optional(),
        line1: text(ACCOUNT_LIMITS.line1).optional(),
        line2: text(ACCOUNT_LIMITS.line2).optional(),
        postal_code: text(ACCOUNT_LIMITS.postal_code).optional(),
        state: text(ACCOUNT_LIMITS.state).optional(),
      },
      { error: "must be an object" },
    )
    .optional(),
});
export type TUpdateAccountInput = z.infer<typeof ZUpdateAccountInput>;

export const ZAddress = z
  .object({
    city: z.string(),
    country: z.string(),
    line1: z.string(),
    line2: z.string(),
    postal_code: z.string(),
    state: z.string(),
  })
  .meta({ id: "Address" });
export type TAddress = z.infer<typeof ZAddress>;

export const ZAccount = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    currency: z.string().meta({ description: "Empty string until the first subscription sets it." }),
    balance: z.number(),
    address: ZAddress,
    created_at: z.string().meta({ description: "YYYY-MM-DD HH:MM:SS in the token's time zone (UTC by default)." }),
  })
  .meta({ id: "Account" });
export type TAccount = z.infer<typeof ZAccount>;
