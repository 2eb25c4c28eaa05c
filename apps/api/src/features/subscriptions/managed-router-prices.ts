import countryToCurrency from "country-to-currency";
import type { PriceSpec } from "../../integrations/stripe/subscription-gateway.ts";

/** Name of the processor product every router subscription bills. */
export const MANAGED_ROUTER_PRODUCT = "Managed router";

/**
 * Monthly price of one managed router, in minor units of each supported currency. A currency not
 * listed here is billed in USD (docs/api.md "Account": currency comes from the country when supported).
 * Three-decimal amounts end in 0, as the processor requires.
 */
export const MANAGED_ROUTER_MONTHLY: Readonly<Record<string, number>> = {
  USD: 1000,
  EUR: 900,
  GBP: 800,
  CHF: 900,
  CAD: 1300,
  AUD: 1500,
  NZD: 1600,
  SEK: 10000,
  NOK: 10000,
  DKK: 7000,
  PLN: 4000,
  CZK: 23000,
  JPY: 1500,
  KRW: 13000,
  INR: 80000,
  SGD: 1300,
  HKD: 7800,
  BRL: 5000,
  MXN: 17000,
  ZAR: 18000,
  KWD: 3000,
  BHD: 3800,
};

export const FALLBACK_CURRENCY = "USD";

/** The currency a new subscription uses: the country's own when priced, else USD. */
export const currencyForCountry = (country: string): string => {
  const currency = (countryToCurrency as Record<string, string | undefined>)[country.toUpperCase()];
  return currency && MANAGED_ROUTER_MONTHLY[currency] !== undefined ? currency : FALLBACK_CURRENCY;
};

/** The price of one router per month in `currency` (upper or lower case); USD when not priced. */
export const managedRouterPrice = (currency: string): PriceSpec => {
  const code =
    MANAGED_ROUTER_MONTHLY[currency.toUpperCase()] !== undefined ? currency.toUpperCase() : FALLBACK_CURRENCY;
  return {
    currency: code.toLowerCase(),
    unitAmount: MANAGED_ROUTER_MONTHLY[code] ?? 1000,
    interval: "month",
    productName: MANAGED_ROUTER_PRODUCT,
  };
};
