/**
 * What a simulated router measures (docs/routeros.md "Simulator"): CPU, memory, disk, temperature,
 * voltage, interface counters and ping round trips that are plausible for its hardware, differ per
 * router (a seed from its id) and drift slowly with time, the same at any moment for the same seed.
 * Interface counters grow with the uptime and so start again from zero at a reboot. `overload`,
 * `overheat` and `lossy` (`--overload K`, `--overheat K`, `--lossy K`) push one measure past the
 * default thresholds of CONTRACT section 20: CPU above 95 %, temperature above 80 C, half the
 * pings lost.
 */

export interface HealthBehaviour {
  overload?: boolean;
  overheat?: boolean;
  lossy?: boolean;
  /** Running VLAN interfaces beyond the usual ones (`vlan100`, ...): a site with many of them. */
  vlans?: number;
}

export interface SimulatedInterface {
  name: string;
  /** `/interface` `type`: `ether`, `wlan`, `wg`, `pppoe-out`, `vlan`, `bridge`, ... */
  type: string;
  running: boolean;
  rxByte: number;
  txByte: number;
  rxError: number;
  txError: number;
}

/** A `/system health` item as RouterOS 7 lists it. */
export interface HealthSensor {
  name: string;
  value: string;
  type: "C" | "V";
}

export interface HealthResources {
  cpuLoad: number;
  totalMemory: number;
  freeMemory: number;
  totalHdd: number;
  freeHdd: number;
}

const MIB = 1024 * 1024;

/** FNV-1a of the text, then a few rounds of mixing: a stable 32-bit seed. */
export const healthSeed = (text: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
};

/** A number in [0, 1) from a seed and a salt (pure, so values repeat for the same router). */
const unit = (seed: number, salt: number): number => {
  let x = (seed ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return ((x ^ (x >>> 16)) >>> 0) / 2 ** 32;
};

/** A slow wave in [-1, 1]: period in seconds, phase per router and salt. */
const wave = (seed: number, salt: number, seconds: number, period: number): number =>
  Math.sin((2 * Math.PI * seconds) / period + unit(seed, salt) * 2 * Math.PI);

/** The interfaces a router of this kind has; the heartbeat reports the running ones of the watched types. */
const interfacePlan = (
  seed: number,
  routerboard: boolean,
  vlans: number,
): Array<{ name: string; type: string; running: boolean }> => [
  ...basePlan(seed, routerboard),
  ...Array.from({ length: vlans }, (_, i) => ({ name: `vlan${100 + i}`, type: "vlan", running: true })),
];

const basePlan = (seed: number, routerboard: boolean): Array<{ name: string; type: string; running: boolean }> =>
  routerboard
    ? [
        { name: "ether1", type: "ether", running: true },
        { name: "ether2", type: "ether", running: true },
        { name: "ether3", type: "ether", running: unit(seed, 40) < 0.5 },
        { name: "ether4", type: "ether", running: false },
        { name: "bridge", type: "bridge", running: true },
        { name: "vlan10", type: "vlan", running: true },
        { name: "pppoe-out1", type: "pppoe-out", running: unit(seed, 41) < 0.5 },
        { name: "wlan1", type: "wlan", running: true },
      ]
    : [
        { name: "ether1", type: "ether", running: true },
        { name: "ether2", type: "ether", running: true },
      ];

export class SimulatedHealth {
  readonly #seed: number;
  readonly #routerboard: boolean;
  readonly behaviour: HealthBehaviour;
  #pings = 0;

  constructor(seed: number, routerboard: boolean, behaviour: HealthBehaviour = {}) {
    this.#seed = seed;
    this.#routerboard = routerboard;
    this.behaviour = behaviour;
  }

  /** `/system resource`: CPU load in percent, memory and disk in bytes. */
  resources(nowMs: number): HealthResources {
    const s = this.#seed;
    const t = nowMs / 1000;
    const totalMemory = (this.#routerboard ? 1024 : 2048) * MIB;
    const totalHdd = (this.#routerboard ? 1024 : 4096) * MIB;
    const cpu = this.behaviour.overload
      ? 96 + Math.round(3 * (0.5 + wave(s, 1, t, 600) / 2))
      : Math.round(5 + unit(s, 2) * 25 + 10 * (0.5 + wave(s, 3, t, 7200) / 2));
    const memoryUsed = 0.25 + unit(s, 4) * 0.3 + 0.05 * wave(s, 5, t, 14_400);
    const diskUsed = 0.1 + unit(s, 6) * 0.4 + 0.01 * wave(s, 7, t, 86_400);
    return {
      cpuLoad: cpu,
      totalMemory,
      freeMemory: Math.round(totalMemory * (1 - memoryUsed)),
      totalHdd,
      freeHdd: Math.round(totalHdd * (1 - diskUsed)),
    };
  }

  /** `/system health`: a RouterBOARD's temperature and voltage; a CHR has no sensors. */
  sensors(nowMs: number): HealthSensor[] {
    if (!this.#routerboard) return [];
    const s = this.#seed;
    const t = nowMs / 1000;
    const temperature = this.behaviour.overheat
      ? 82 + Math.round(4 * (0.5 + wave(s, 8, t, 900) / 2))
      : Math.round(38 + unit(s, 9) * 14 + 3 * wave(s, 10, t, 10_800));
    const voltage = Math.round((24 + (unit(s, 11) - 0.5) * 0.6 + 0.1 * wave(s, 12, t, 3600)) * 10) / 10;
    return [
      { name: "temperature", value: String(temperature), type: "C" },
      { name: "voltage", value: voltage.toFixed(1), type: "V" },
    ];
  }

  /**
   * `/interface`: counters since boot. Each interface's byte rate is a base rate times
   * (1 + 0.3 sin(...)), whose integral over the uptime is written in closed form, so counters only
   * grow while the router is up and restart from zero at a reboot.
   */
  interfaces(nowMs: number, bootedAtMs: number): SimulatedInterface[] {
    const s = this.#seed;
    const uptime = Math.max(0, (nowMs - bootedAtMs) / 1000);
    return interfacePlan(s, this.#routerboard, this.behaviour.vlans ?? 0).map((plan, i) => {
      const bytes = (salt: number, base: number): number => {
        if (!plan.running) return 0;
        const rate = base * (0.2 + unit(s, salt)); // bytes per second
        const period = 3600 + unit(s, salt + 1) * 7200;
        const phase = unit(s, salt + 2) * 2 * Math.PI;
        const w = (2 * Math.PI) / period;
        const integral = uptime - (0.3 / w) * (Math.cos(w * uptime + phase) - Math.cos(phase));
        return Math.floor(rate * integral);
      };
      const rxByte = bytes(100 + i * 10, 250_000);
      const txByte = bytes(105 + i * 10, 60_000);
      return {
        name: plan.name,
        type: plan.type,
        running: plan.running,
        rxByte,
        txByte,
        rxError: Math.floor(rxByte / 4_000_000_000),
        txError: 0,
      };
    });
  }

  /**
   * `/ping address=... count=N as-value`: round trips in seconds, undefined for a lost packet.
   * A lossy router loses every other packet, alternating which, so half are lost over time.
   */
  ping(nowMs: number, count: number): Array<number | undefined> {
    const s = this.#seed;
    const call = this.#pings++;
    const base = 2 + unit(s, 13) * 18 + 2 * wave(s, 14, nowMs / 1000, 1800);
    return Array.from({ length: count }, (_, seq) => {
      if (this.behaviour.lossy && (seq + call) % 2 === 0) return undefined;
      const jitter = unit(s ^ call, 15 + seq) * 3;
      return Math.round((base + jitter) * 1000) / 1_000_000;
    });
  }
}
