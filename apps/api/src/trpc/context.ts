import type { Request, Response } from "express";
import type { Services } from "../services.ts";

/** Per-request context: no I/O here, so a bad token fails inside a procedure with a shaped error. */
export interface RequestContext {
  transport: "trpc" | "rest";
  authorization: string | undefined;
  /** Client address as the socket saw it. */
  ip: string | undefined;
  services: Services;
  req: Request;
  res: Response;
}

export const contextFactory =
  (services: Services, transport: RequestContext["transport"]) =>
  ({ req, res }: { req: Request; res: Response }): RequestContext => ({
    transport,
    authorization: req.headers.authorization,
    ip: req.socket.remoteAddress,
    services,
    req,
    res,
  });
