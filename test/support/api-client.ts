/** A JSON answer, read field by field. */
export type Json = any;

/**
 * Bearer-token JSON calls against a running API for e2e tests: `call` answers status and body,
 * `ok` throws unless the status is 2xx. `baseUrl` is read at each call (the system starts later).
 */
export const apiClient = (baseUrl: () => string) => {
  const call = async (
    method: string,
    path: string,
    token: string,
    body?: unknown,
  ): Promise<{ status: number; body: Json }> => {
    const res = await fetch(`${baseUrl()}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const ok = async (method: string, path: string, token: string, body?: unknown): Promise<Json> => {
    const answer = await call(method, path, token, body);
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  return { call, ok };
};
