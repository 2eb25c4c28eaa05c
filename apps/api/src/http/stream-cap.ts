import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Services } from "../services.ts";
import { fromConnectionParams } from "../trpc/context.ts";
import { describeError } from "../trpc/errors.ts";
import { trpcErrorBody } from "../trpc/init.ts";
import { answerHeaders } from "./answer-headers.ts";

/** The credential of a subscription request: the header, or tRPC's `connectionParams` (EventSource sends no headers). */
const authorizationOf = (req: Request): string | undefined => {
  if (req.headers.authorization !== undefined) return req.headers.authorization;
  const raw = req.query.connectionParams;
  if (typeof raw !== "string") return undefined;
  try {
    return fromConnectionParams(JSON.parse(raw));
  } catch {
    return undefined;
  }
};

/**
 * Open streams per credential and per organization (docs/api.md "Rate limits"), checked before tRPC
 * sees a subscription: tRPC answers every subscription 200 and puts a failure inside the stream, so
 * the 429 with `Retry-After` (in tRPC's error shape) is answered here. A request whose credential
 * does not verify goes on to tRPC, which refuses it as always; an admitted one holds its slot until
 * its answer closes.
 */
export const trpcStreamCap = (services: Services): RequestHandler => {
  return (req: Request, res: Response, next: NextFunction) => {
    // A subscription is an EventSource's GET (tRPC's httpSubscriptionLink): it asks for an event stream.
    if (req.method !== "GET" || !req.headers.accept?.includes("text/event-stream")) {
      next();
      return;
    }
    const path = req.path.slice(1);
    void (async () => {
      const authorization = authorizationOf(req);
      let release: () => void;
      try {
        const claims = await services.tokens.verify(authorization);
        const organizationId = await services.organizations.resolve(claims.organizationId);
        release = services.streamLimits.open({ ...claims, organizationId });
      } catch (error) {
        const described = describeError(error);
        if (described.status !== 429) {
          next();
          return;
        }
        const body = JSON.stringify(trpcErrorBody(error, path, "subscription"));
        res.writeHead(429, {
          ...answerHeaders(new Map(), [path], [described]),
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        });
        res.end(body);
        return;
      }
      res.once("close", release);
      next();
    })().catch(next);
  };
};
