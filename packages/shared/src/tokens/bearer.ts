/**
 * `Authorization: Bearer <token>` -> token, or undefined (RFC 6750 section 2.1): the one parser of
 * the bearer header for every credential (access tokens, API keys, the login hook's secret, the
 * metrics token, heartbeat tokens). The scheme is case-insensitive (RFC 9110 section 11.1); spaces or
 * tabs separate it from the token and may follow it; the token itself holds none. A loop rather
 * than a regex: it runs on every API request and every HTTP heartbeat.
 */
export const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined || header.length <= SCHEME.length + 1) return undefined;
  for (let i = 0; i < SCHEME.length; i++) {
    if ((header.charCodeAt(i) | 0x20) !== SCHEME.charCodeAt(i)) return undefined;
  }
  let start = SCHEME.length;
  if (!isSpace(header.charCodeAt(start))) return undefined;
  while (start < header.length && isSpace(header.charCodeAt(start))) start++;
  let end = start;
  while (end < header.length && !isSpace(header.charCodeAt(end))) end++;
  if (end === start) return undefined;
  for (let i = end; i < header.length; i++) if (!isSpace(header.charCodeAt(i))) return undefined;
  return header.slice(start, end);
};

const SCHEME = "bearer";
const isSpace = (code: number) => code === 0x20 || code === 0x09;
