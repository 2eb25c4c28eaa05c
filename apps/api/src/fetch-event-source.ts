/**
 * A minimal EventSource on fetch, for runtimes without one (Node 24 keeps its own behind a flag).
 * Enough for tRPC's `httpSubscriptionLink`: named events, `data`, `id`, close. It does not
 * reconnect by itself; tRPC's link decides what to do on `error`.
 */

type Listener = (event: { type: string; data?: string; lastEventId?: string }) => void;

export interface FetchEventSourceInit {
  withCredentials?: boolean;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

export class FetchEventSource {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 2;
  readonly CONNECTING = 0;
  readonly OPEN = 1;
  readonly CLOSED = 2;
  readyState = 0;
  readonly url: string;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #abort = new AbortController();

  constructor(url: string, init: FetchEventSourceInit = {}) {
    this.url = url;
    void this.#run(init);
  }

  addEventListener(type: string, listener: Listener): void {
    let set = this.#listeners.get(type);
    if (!set) {
      set = new Set();
      this.#listeners.set(type, set);
    }
    set.add(listener);
  }

  removeEventListener(type: string, listener: Listener): void {
    this.#listeners.get(type)?.delete(listener);
  }

  close(): void {
    this.readyState = this.CLOSED;
    this.#abort.abort();
  }

  #emit(type: string, data?: string, lastEventId?: string): void {
    for (const listener of [...(this.#listeners.get(type) ?? [])]) listener({ type, data, lastEventId });
  }

  async #run(init: FetchEventSourceInit): Promise<void> {
    try {
      const res = await (init.fetch ?? fetch)(this.url, {
        headers: { accept: "text/event-stream", ...init.headers },
        signal: this.#abort.signal,
      });
      if (!res.ok || !res.body) throw new Error(`event stream answered ${res.status}`);
      this.readyState = this.OPEN;
      this.#emit("open");
      const decoder = new TextDecoder();
      let buffer = "";
      let event = "";
      let data: string[] = [];
      let id = "";
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline = buffer.search(/\r\n|\r|\n/);
        while (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
          if (line === "") {
            if (data.length > 0) this.#emit(event || "message", data.join("\n"), id);
            event = "";
            data = [];
          } else if (!line.startsWith(":")) {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "event") event = value;
            else if (field === "data") data.push(value);
            else if (field === "id") id = value;
          }
          newline = buffer.search(/\r\n|\r|\n/);
        }
      }
    } catch {
      // Aborted by close(), or the connection failed: reported below unless closed on purpose.
    }
    if (this.readyState === this.CLOSED) return;
    this.readyState = this.CLOSED;
    this.#emit("error");
  }
}
