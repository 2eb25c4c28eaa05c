import type { Request, Response } from "express";
import { type CookieToSet, SESSION_COOKIE, type SessionRequest } from "./sign-in.service.ts";

/** One cookie of the request's `Cookie` header (the first of that name); undefined when absent. */
export const readCookie = (req: Request, name: string): string | undefined => {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    return part.slice(eq + 1).trim();
  }
  return undefined;
};

/**
 * Renders a cookie as docs/api.md "Sign-in" fixes it: HttpOnly, SameSite=Lax, Secure when the API's
 * public URL is https. Values are base64url, so nothing needs escaping.
 */
export const setCookie = (res: Response, cookie: CookieToSet, secure: boolean): void => {
  const parts = [
    `${cookie.name}=${cookie.value}`,
    `Path=${cookie.path}`,
    `Max-Age=${cookie.maxAge}`,
    "HttpOnly",
    "SameSite=Lax",
  ];
  if (secure) parts.push("Secure");
  res.append("Set-Cookie", parts.join("; "));
};

/** What the sign-in service needs of a cookie-authenticated request. */
export const sessionRequest = (req: Request): SessionRequest => ({
  session: readCookie(req, SESSION_COOKIE),
  origin: req.headers.origin,
  requestOrigin: `${req.protocol}://${req.get("host") ?? ""}`,
});
