import type { ServerResponse } from "node:http";

const JSON_TYPE = "application/json; charset=utf-8";

/** Sends JSON text that is already serialized (acks are encoded once, errors by `errorFrame`). */
export const sendJson = (res: ServerResponse, status: number, text: string, headers?: Record<string, string>): void => {
  res.writeHead(status, {
    "content-type": JSON_TYPE,
    "content-length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
};
