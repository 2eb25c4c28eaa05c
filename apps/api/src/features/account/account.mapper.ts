import type { AccountRecord } from "@fleet/db";
import { formatDateTime, fromMinorUnits, type TAccount } from "@fleet/shared";

/** Record -> response (docs/api.md "Account"): nested address, `created_at` in the token's zone. */
export const toAccountResponse = (account: AccountRecord, timezone: string | undefined): TAccount => ({
  id: account.id,
  name: account.name,
  email: account.email,
  currency: account.currency,
  balance: fromMinorUnits(account.balanceMinor, account.currency),
  address: {
    city: account.address.city,
    country: account.address.country,
    line1: account.address.line1,
    line2: account.address.line2,
    postal_code: account.address.postalCode,
    state: account.address.state,
  },
  created_at: formatDateTime(account.createdAt, timezone),
});
