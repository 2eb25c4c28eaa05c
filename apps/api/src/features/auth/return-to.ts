/** Where a sign-in lands when `return_to` is missing or not a console path (docs/api.md "Sign-in"). */
export const DEFAULT_RETURN_TO = "/console/";

const CONSOLE_PATH = /^\/console(?:[/?#]|$)/;
const PATH_CHARACTERS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%]*$/;
const MAX_LENGTH = 1000;

/**
 * `return_to` as a path under /console, or `/console/` (docs/api.md "Sign-in"): never an absolute
 * URL, `//host` or `/\host`, in any encoding, nor a path that climbs out of /console.
 */
export const safeReturnTo = (value: unknown): string => {
  if (typeof value !== "string" || value.length > MAX_LENGTH) return DEFAULT_RETURN_TO;
  if (!CONSOLE_PATH.test(value) || !PATH_CHARACTERS.test(value)) return DEFAULT_RETURN_TO;
  // Decoded until it stops changing (double encodings), the path must still be a plain one.
  let decoded = value;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return DEFAULT_RETURN_TO;
    }
    if (next === decoded) break;
    decoded = next;
  }
  const path = decoded.split(/[?#]/, 1)[0] ?? "";
  if (decoded.includes("\\") || path.includes("//") || /(^|\/)\.\.?(\/|$)/.test(path)) return DEFAULT_RETURN_TO;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\u0000-\u001f\u007f]/.test(decoded)) return DEFAULT_RETURN_TO;
  if (!CONSOLE_PATH.test(decoded)) return DEFAULT_RETURN_TO;
  return value;
};
