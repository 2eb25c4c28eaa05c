/**
 * Minor-unit rules of the payment processor (Stripe's list, which differs from ISO 4217 for a few
 * currencies): amounts on the wire are integers in the smallest unit.
 */
const ZERO_DECIMAL = new Set([
  "BIF",
  "CLP",
  "DJF",
  "GNF",
  "JPY",
  "KMF",
  "KRW",
  "MGA",
  "PYG",
  "RWF",
  "UGX",
  "VND",
  "VUV",
  "XAF",
  "XOF",
  "XPF",
]);
const THREE_DECIMAL = new Set(["BHD", "JOD", "KWD", "OMR", "TND"]);

/** Digits after the decimal point; an unset currency ("" before the first subscription) uses 2. */
export const currencyDecimals = (currency: string): number => {
  const code = currency.toUpperCase();
  if (ZERO_DECIMAL.has(code)) return 0;
  if (THREE_DECIMAL.has(code)) return 3;
  return 2;
};

/** 1999 USD minor -> 19.99; 1999 JPY -> 1999; 1999 KWD -> 1.999. */
export const fromMinorUnits = (amount: number, currency: string): number => {
  const digits = currencyDecimals(currency);
  return digits === 0 ? amount : Number((amount / 10 ** digits).toFixed(digits));
};

const symbols = new Map<string, string>();

/** UTF-8 symbol of a currency ("$", "€", "¥", "£", "₹"); falls back to the ISO code. */
export const currencySymbol = (currency: string): string => {
  const code = currency.toUpperCase();
  const cached = symbols.get(code);
  if (cached !== undefined) return cached;
  let symbol = code;
  try {
    const part = new Intl.NumberFormat("en", { style: "currency", currency: code, currencyDisplay: "narrowSymbol" })
      .formatToParts(0)
      .find((p) => p.type === "currency");
    if (part) symbol = part.value;
  } catch {
    // Not a currency ICU knows: keep the code.
  }
  symbols.set(code, symbol);
  return symbol;
};
