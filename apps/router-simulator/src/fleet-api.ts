/** The few API calls the simulator makes, over plain HTTP (it speaks to the system only over the wire). */
export interface EnrolledRouter {
  router_id: string;
  heartbeat_token: string;
  name: string;
  /** The management-tunnel address the system assigned (absent in token files of older runs). */
  tunnel_ip?: string;
  /** The enroll answer's one-line adoption command (docs/routeros.md "Adoption"). */
  adoption_command?: string;
}

export class FleetApi {
  readonly #baseUrl: string;
  #token: string | undefined;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the simulator's callers read the answers field by field
  async #call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${this.#baseUrl}${path}`, {
      method,
      headers: {
        ...(this.#token ? { authorization: `Bearer ${this.#token}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).catch((error: unknown) => {
      const code = ((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message) || "unreachable";
      throw new Error(`cannot reach the API at ${this.#baseUrl} (${code}): is npm start running there (PORT, HOST)?`);
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON: shown as text in errors.
    }
    return { status: res.status, body: parsed };
  }

  /** Dev login (the API must run with AUTH_DEV_LOGIN, as `npm start` does). */
  async login(email: string): Promise<void> {
    const res = await this.#call("POST", "/v1/auth/dev-login", { email });
    if (res.status !== 200)
      throw new Error(
        `dev login failed (${res.status}) at ${this.#baseUrl}: is the API running, with AUTH_DEV_LOGIN on?`,
      );
    this.#token = res.body.access_token;
  }

  /**
   * Uses a bearer credential made elsewhere instead of dev-login: an operator's API key, which
   * may carry `tunnel:assign` (`npm run admin -- apikey create --scopes tunnel:assign,...`).
   */
  useToken(token: string): void {
    this.#token = token;
  }

  /** Enrolling needs a billing account: the simulated fleet owner gets one when missing. */
  async ensureAccount(email: string): Promise<void> {
    const current = await this.#call("GET", "/v1/account");
    if (current.status === 200) return;
    const created = await this.#call("POST", "/v1/account", {
      name: "Simulated fleet",
      email,
      address: { country: "US" },
    });
    if (created.status !== 201 && created.status !== 409)
      throw new Error(`could not create the billing account (${created.status})`);
    // Beyond TRIAL_ROUTERS routers a card must be on file: Stripe's test card (emulator or test mode).
    const card = await this.#call("POST", "/v1/account/payment-methods", { id: "pm_card_visa" });
    if (card.status !== 201)
      throw new Error(`could not save a test card (${card.status}): ${card.body?.message ?? ""}`);
  }

  /** `tunnelIp`: a management-tunnel address to claim (needs the platform scope `tunnel:assign`); else the system assigns one. */
  async enroll(name: string, tunnelIp?: string): Promise<EnrolledRouter> {
    const res = await this.#call("POST", "/api/routers", { name, ...(tunnelIp ? { tunnel_ip: tunnelIp } : {}) });
    if (res.status !== 201) throw new Error(`enrollment failed (${res.status}): ${res.body?.message ?? ""}`);
    const command = res.body.data.adoption?.command;
    const assigned = res.body.data.tunnel_ip;
    return {
      router_id: res.body.data.router.id,
      heartbeat_token: res.body.data.heartbeat_token,
      name,
      ...(typeof assigned === "string" && assigned !== "" ? { tunnel_ip: assigned } : {}),
      ...(typeof command === "string" ? { adoption_command: command } : {}),
    };
  }
}
