/**
 * How a router is matched to its catalogue entry. Routers report their model and board name in
 * whatever spelling their RouterOS version uses ("hAP ax^3", "hAP ax3", "RB5009UG+S+"), so both
 * sides are reduced to one key: Unicode-compatibility folded (so "ax³" equals "ax^3"), lower
 * case, with spaces, hyphens, underscores and carets dropped. "+" stays: it is part of model
 * codes ("RB5009UG+S+" and "RB5009UGS" are different boards).
 */
export const normalizeOemKey = (value: string): string =>
  value
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[\s\-_^]+/g, "");

/** The key of the Cloud Hosted Router entry. */
export const CHR_KEY = "chr";

/**
 * Keys to look up, best first: the reported model, then the board name. Virtual instances report
 * a board name such as "CHR QEMU Standard PC (i440FX + PIIX, 1996)" or "CHR VMware Virtual
 * Platform", so anything starting with "CHR" falls back to the CHR entry.
 */
export const oemLookupKeys = (model: string | null | undefined, boardName: string | null | undefined): string[] => {
  const keys: string[] = [];
  for (const raw of [model, boardName]) {
    const key = raw ? normalizeOemKey(raw) : "";
    if (key && !keys.includes(key)) keys.push(key);
  }
  if (keys.some((key) => key.startsWith(CHR_KEY)) && !keys.includes(CHR_KEY)) keys.push(CHR_KEY);
  return keys;
};
