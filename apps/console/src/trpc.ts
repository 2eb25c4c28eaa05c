import { type AppRouter, createClient } from "@fleet/api/client";
import { TRPCClientError } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { session } from "./session.ts";

/**
 * The console's one way to the system: the typed client of `@fleet/api/client` (docs/console.md
 * "How it talks to the system"). Types come from the server's `AppRouter`; none is copied here.
 */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

export type Outputs = inferRouterOutputs<AppRouter>;
export type Inputs = inferRouterInputs<AppRouter>;
export type Router = Outputs["routers"]["list"]["data"][number];
export type Forward = Outputs["forwards"]["list"][number];

/** Same origin: the API serves the console; the credential is read per request. */
export const makeClient = () => createClient({ url: window.location.origin, token: () => session.token() });

/** The server's field errors (`data.errors`: `{ "address.country": ["..."] }`, docs/api.md "Errors"), empty when none. */
export const fieldErrors = (error: unknown): Record<string, string[]> =>
  error instanceof TRPCClientError
    ? ((error.data as { errors?: Record<string, string[]> } | undefined)?.errors ?? {})
    : {};

export const httpStatus = (error: unknown): number | undefined =>
  error instanceof TRPCClientError ? (error.data as { httpStatus?: number } | undefined)?.httpStatus : undefined;

/** The credential was refused (missing, expired, revoked). */
export const isUnauthorized = (error: unknown): boolean => httpStatus(error) === 401;

/** No answer from the server at all (network down, server gone): the error carries no tRPC shape. */
export const isConnectionError = (error: unknown): boolean =>
  error instanceof TRPCClientError && error.data === undefined && error.shape === undefined;

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
