import type { Request, Response } from "express";
import type { Services } from "../services.ts";

/** Per-request context: no I/O here, so a bad token fails inside a procedure with a shaped error. */
export interface RequestContext {
  transport: "trpc" | "rest";
  authorization: string | undefined;
  /** Client address: the socket's peer, or the client a TRUST_PROXY proxy names (docs/api.md "Rate limits"). */
  ip: string | undefined;
  services: Services;
  req: Request;
  res: Response;
}

/**
 * Browsers' EventSource cannot send headers, so SSE subscriptions (`routers.onStatus`) may carry the
 * token in tRPC's `connectionParams` instead: `{ "authorization": "Bearer <token>" }` or `{ "token": "<token>" }`.
 */
export const fromConnectionParams = (
  params: Record<string, string | undefined> | null | undefined,
): string | undefined => {
  if (!params) return undefined;
  if (typeof params.authorization === "string") return params.authorization;
  return typeof params.token === "string" ? `Bearer ${params.token}` : undefined;
};

export const contextFactory =
  (services: Services, transport: RequestContext["transport"]) =>
  ({
    req,
    res,
    info,
  }: {
    req: Request;
    res: Response;
    info?: { connectionParams?: Record<string, string | undefined> | null };
  }): RequestContext => ({
    transport,
    authorization: req.headers.authorization ?? fromConnectionParams(info?.connectionParams),
    ip: services.clientAddress(req),
    services,
    req,
    res,
  });
