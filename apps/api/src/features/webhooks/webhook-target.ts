import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { isPubliclyRoutedAddress } from "@fleet/shared";
import { inSpan, SpanKind, SpanStatusCode } from "@fleet/runtime";

export type TTargetCheck = { ok: true; url: URL } | { ok: false; message: string };

type Resolve = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const resolveAll: Resolve = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * A webhook URL must be https to a publicly routed address; with `allowPrivate`
 * (`WEBHOOK_ALLOW_PRIVATE`) http and loopback/private addresses are allowed too (docs/api.md
 * "Audit log and webhooks"). Every address the host resolves to must pass, so a name with one
 * public and one private record cannot be used to reach the private one.
 */
export const checkWebhookUrl = async (
  raw: string,
  allowPrivate: boolean,
  resolve: Resolve = resolveAll,
): Promise<TTargetCheck> => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: "must be an absolute https:// URL" };
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    return { ok: false, message: allowPrivate ? "must be an http:// or https:// URL" : "must be an https:// URL" };
  }
  if (url.username || url.password) return { ok: false, message: "must not carry credentials" };
  if (allowPrivate) return { ok: true, url };
  const host = bareHost(url);
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await resolve(host)).map((a) => a.address);
    } catch {
      return { ok: false, message: `host ${host} does not resolve` };
    }
  }
  if (addresses.length === 0 || !addresses.every(isPubliclyRoutedAddress)) {
    return { ok: false, message: "must point at a publicly routed address" };
  }
  return { ok: true, url };
};

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface WebhookResult {
  /** HTTP status, or null when no answer came (refused address, network error, timeout). */
  status: number | null;
  /** The first bytes of the answer (at most `maxBodyBytes`). */
  body: string | null;
  error: string | null;
}

export interface SendOptions {
  allowPrivate: boolean;
  timeoutMs?: number;
  maxBodyBytes?: number;
}

class BlockedAddress extends Error {}

/**
 * One POST to a webhook target. The address is checked again here, on the address the socket will
 * really use (a custom `lookup`), so DNS that changed since creation cannot reach a private
 * address. Redirects are not followed (node's http never does); the whole exchange has a deadline;
 * only the first bytes of the answer are read, then the socket is dropped.
 */
export const sendWebhook = (request: WebhookRequest, options: SendOptions): Promise<WebhookResult> =>
  // docs/operations.md "Tracing": a span per delivery attempt (the URL's origin, never its path or query).
  inSpan(
    "webhook deliver",
    { "server.address": safeHost(request.url) },
    async (span) => {
      const result = await postWebhook(request, options);
      if (result.status !== null) span.setAttribute("http.response.status_code", result.status);
      if (result.status === null || result.status >= 300) span.setStatus({ code: SpanStatusCode.ERROR });
      return result;
    },
    SpanKind.CLIENT,
  );

const safeHost = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return "";
  }
};

const postWebhook = (request: WebhookRequest, options: SendOptions): Promise<WebhookResult> => {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxBodyBytes = options.maxBodyBytes ?? 1024;
  return new Promise<WebhookResult>((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: WebhookResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      finish({ status: null, body: null, error: "invalid URL" });
      return;
    }
    const host = bareHost(url);
    if (!options.allowPrivate && net.isIP(host) && !isPubliclyRoutedAddress(host)) {
      finish({ status: null, body: null, error: `refused: ${host} is not a publicly routed address` });
      return;
    }
    const lookup: net.LookupFunction = (hostname, lookupOptions, callback) => {
      dns.lookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
        if (error) return callback(error, "", 4);
        const allowed = options.allowPrivate ? addresses : addresses.filter((a) => isPubliclyRoutedAddress(a.address));
        if (allowed.length === 0 || allowed.length !== addresses.length) {
          return callback(new BlockedAddress(`refused: ${hostname} resolves to a non-public address`), "", 4);
        }
        if ((lookupOptions as { all?: boolean }).all)
          return (callback as unknown as (e: null, a: typeof allowed) => void)(null, allowed);
        const first = allowed[0] as dns.LookupAddress;
        callback(null, first.address, first.family);
      });
    };
    const transport = url.protocol === "https:" ? https : http;
    const req = transport.request(
      url,
      {
        method: "POST",
        headers: { ...request.headers, "content-length": Buffer.byteLength(request.body) },
        lookup,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const text = Buffer.concat(chunks).subarray(0, maxBodyBytes).toString("utf8").replaceAll("\u0000", "");
          finish({ status: res.statusCode ?? null, body: text, error: null });
          res.destroy();
        };
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= maxBodyBytes) done();
        });
        res.on("end", done);
        res.on("error", done);
        res.on("close", done);
      },
    );
    timer = setTimeout(() => {
      req.destroy(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    timer.unref();
    req.on("error", (error) => finish({ status: null, body: null, error: error.message }));
    req.end(request.body);
  });
};
