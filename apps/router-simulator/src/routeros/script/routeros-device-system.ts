import type { DeviceSnapshot, RosVal, RouterOsDevice } from "./routeros-device.ts";
import { RouterOsRuntimeError } from "./routeros-device.ts";

/**
 * What a fleet change needs of a simulated router (docs/routeros.md "Simulator"): the settings a
 * change script sets (`/system identity|note`, `/ip dns`, `/system ntp client`), binary backups
 * (`/system backup save|load`, which restore the whole configuration), the update channels
 * (`/system package update`) and reboots (offline for `rebootSeconds`, back with the installed
 * version). With `breakTunnelOnChange`, the first script run over SSH that changes the
 * configuration cuts the router off its management tunnel (no SSH, no heartbeats) until a backup
 * is loaded: what the guard of a fleet change is for.
 */

/** RouterOS versions on each update channel; the router runs {@link INSTALLED_VERSION} at first. */
export const UPDATE_CHANNELS: Readonly<Record<string, string>> = {
  stable: "7.16.2",
  "long-term": "7.12.2",
  testing: "7.17rc3",
  development: "7.17rc3",
};
export const INSTALLED_VERSION = "7.15.1";

export interface RouterOsSystemOptions {
  /** `/system reboot` and `/system backup load` keep the router offline this long (default 10 s). */
  rebootSeconds?: number;
  /** `--break-tunnel-on-change`: the next configuration-changing SSH script cuts the tunnel. */
  breakTunnelOnChange?: boolean;
}

/** The settings outside the device's tables, which a binary backup also keeps. */
interface Settings {
  note: Record<string, string>;
  dns: Record<string, string>;
  ntp: Record<string, string>;
}

interface BinaryBackup {
  device: DeviceSnapshot;
  identity: string;
  settings: Settings;
}

const SETTABLE: Record<string, readonly string[]> = {
  "ip dns": ["servers", "allow-remote-requests", "cache-size"],
  "system note": ["note", "show-at-login"],
  "system ntp client": ["enabled", "servers", "mode"],
};

/** A command this module does not handle. */
export const NOT_SYSTEM = Symbol("not a system command");

/** A router's settings out of the box. */
const DEFAULT_SETTINGS: Readonly<Settings> = {
  note: { note: "", "show-at-login": "yes" },
  dns: { servers: "", "allow-remote-requests": "no" },
  ntp: { enabled: "no", servers: "" },
};

/** A value as `/export` writes it: bare when it is a plain word, else quoted with `\` escapes. */
const exportValue = (value: string): string =>
  /^[\w.,:/@-]+$/.test(value) ? value : `"${value.replace(/[\\"$]/g, (c) => `\\${c}`)}"`;

export class RouterOsSystem {
  readonly #device: RouterOsDevice;
  readonly #rebootMs: number;
  #settings: Settings = structuredClone(DEFAULT_SETTINGS);
  readonly #backups = new Map<string, BinaryBackup>();
  #channel = "stable";
  #latest: string | undefined;
  #downloaded: string | undefined;
  #status = "";
  #breakArmed: boolean;
  #tunnelBroken = false;
  #rebooting: NodeJS.Timeout | undefined;
  /** Boots done (tests wait for a reboot to finish). */
  boots = 0;

  constructor(device: RouterOsDevice, options: RouterOsSystemOptions = {}) {
    this.#device = device;
    this.#rebootMs = (options.rebootSeconds ?? 10) * 1000;
    this.#breakArmed = options.breakTunnelOnChange === true;
  }

  /** False while rebooting or cut off the tunnel: SSH and heartbeats fail. */
  get reachable(): boolean {
    return this.#rebooting === undefined && !this.#tunnelBroken;
  }

  get rebooting(): boolean {
    return this.#rebooting !== undefined;
  }

  get tunnelBroken(): boolean {
    return this.#tunnelBroken;
  }

  /** Names of the binary backups kept (`<name>.backup`). */
  backups(): string[] {
    this.#forgetRemovedFiles();
    return [...this.#backups.keys()];
  }

  /** A backup whose file was removed (`/file remove`) is gone: it can no longer be loaded. */
  #forgetRemovedFiles(): void {
    const files = new Set(this.#device.tables.file.map((f) => f.props.name));
    for (const file of this.#backups.keys()) if (!files.has(file)) this.#backups.delete(file);
  }

  settings(): Readonly<Settings> {
    return structuredClone(this.#settings);
  }

  /**
   * The settings in `/export terse`: like RouterOS, only those changed from their defaults, one
   * `set` line per menu (so a change script's effect shows in the router's configuration backups).
   */
  exportLines(): string[] {
    const lines: string[] = [];
    for (const menu of Object.keys(SETTABLE)) {
      const defaults = this.#settingsOf(menu, DEFAULT_SETTINGS);
      const changed = Object.entries(this.#settingsOf(menu)).filter(
        ([name, value]) => value !== (defaults[name] ?? ""),
      );
      if (changed.length > 0)
        lines.push(`/${menu}`, `set ${changed.map(([n, v]) => `${n}=${exportValue(v)}`).join(" ")}`);
    }
    return lines;
  }

  /** Powers off for good (simulator shutdown): a pending reboot never boots. */
  stop(): void {
    clearTimeout(this.#rebooting);
  }

  /**
   * Runs script text received over SSH: answers what the terminal prints (the `:put` lines, then
   * the error that stopped the script, if any). A run that changed the configuration of an armed
   * router cuts it off its tunnel once it has answered.
   */
  async runRemote(text: string): Promise<string> {
    const before = this.#fingerprint();
    const mark = this.#device.log.length;
    let error: string | undefined;
    try {
      await this.#device.run(text);
    } catch (e) {
      error = (e as Error).message;
    }
    const lines = this.#device.log
      .slice(mark)
      .filter((l) => l.topic === "put")
      .map((l) => l.message);
    if (error !== undefined) lines.push(error);
    if (this.#breakArmed && this.#fingerprint() !== before) {
      this.#breakArmed = false;
      this.#tunnelBroken = true;
    }
    return lines.join("\r\n");
  }

  /** The configuration a change can alter (the scheduler and files are how the guard works, so not them). */
  #fingerprint(): string {
    const snapshot = this.#device.snapshot();
    const tables = Object.fromEntries(
      Object.entries(snapshot.tables).filter(([name]) => name !== "system scheduler" && name !== "file"),
    );
    return JSON.stringify([tables, this.#device.identity, this.#settings]);
  }

  /**
   * `/<menu> <verb> ...` of the menus this module owns, with the named arguments evaluated; answers
   * {@link NOT_SYSTEM} for any other.
   */
  async command(
    menu: string,
    verb: string,
    named: Map<string, string>,
    positional: string[],
  ): Promise<RosVal | typeof NOT_SYSTEM> {
    const only = (allowed: readonly string[]) => {
      for (const key of named.keys())
        if (!allowed.includes(key))
          throw new RouterOsRuntimeError(`expected end of command: /${menu} ${verb} has no ${key}`);
    };
    if (menu === "system identity" && verb === "set") {
      only(["name"]);
      const name = named.get("name") ?? "";
      if (name === "") throw new RouterOsRuntimeError("failure: name must be set");
      this.#device.identity = name;
      return undefined;
    }
    const settable = SETTABLE[menu];
    if (settable) {
      const values = this.#settingsOf(menu);
      if (verb === "set") {
        only(settable);
        Object.assign(values, Object.fromEntries(named));
        return undefined;
      }
      if (verb === "get") return this.#get(values, positional[0]);
      return NOT_SYSTEM;
    }
    switch (`${menu}|${verb}`) {
      case "system backup|save": {
        only(["name", "password", "dont-encrypt", "encryption"]);
        const file = backupFile(named.get("name") ?? this.#device.identity);
        this.#backups.set(file, {
          device: this.#device.snapshot(),
          identity: this.#device.identity,
          settings: structuredClone(this.#settings),
        });
        this.#keepFile(file);
        return undefined;
      }
      case "system backup|load": {
        only(["name", "password"]);
        const file = backupFile(named.get("name") ?? "");
        this.#forgetRemovedFiles();
        const backup = this.#backups.get(file);
        if (!backup) throw new RouterOsRuntimeError(`failure: no such file ${file}`);
        // RouterOS loads a backup by rebooting into it; the tunnel comes back with that configuration.
        this.#reboot(() => {
          this.#device.identity = backup.identity;
          this.#settings = structuredClone(backup.settings);
          this.#tunnelBroken = false;
          return backup.device;
        });
        return undefined;
      }
      case "system|reboot":
        only([]);
        this.#reboot(() => undefined);
        return undefined;
      case "system package update|set":
        only(["channel"]);
        if (!Object.hasOwn(UPDATE_CHANNELS, named.get("channel") ?? ""))
          throw new RouterOsRuntimeError("invalid value for argument channel");
        this.#channel = named.get("channel") ?? this.#channel;
        this.#latest = undefined;
        return undefined;
      case "system package update|get":
        return this.#get(
          {
            channel: this.#channel,
            "installed-version": installedVersion(this.#device.version),
            "latest-version": this.#latest ?? "",
            status: this.#status,
          },
          positional[0],
        );
      case "system package update|check-for-updates": {
        only(["once", "duration"]);
        this.#latest = UPDATE_CHANNELS[this.#channel];
        this.#status =
          this.#latest === installedVersion(this.#device.version)
            ? "System is already up to date"
            : "New version is available";
        return undefined;
      }
      case "system package update|download":
        only([]);
        if (this.#latest === undefined) this.#latest = UPDATE_CHANNELS[this.#channel];
        this.#downloaded = this.#latest;
        this.#status = "Downloaded, please reboot router to upgrade it";
        return undefined;
      case "system package update|install": {
        only([]);
        const version = this.#downloaded ?? this.#latest ?? UPDATE_CHANNELS[this.#channel];
        const channel = this.#channel;
        this.#reboot(() => {
          if (version) this.#device.version = `${version} (${channel})`;
          this.#downloaded = undefined;
          this.#latest = undefined;
          this.#status = "";
          return undefined;
        });
        return undefined;
      }
      default:
        return NOT_SYSTEM;
    }
  }

  #settingsOf(menu: string, settings: Readonly<Settings> = this.#settings): Record<string, string> {
    if (menu === "system note") return settings.note;
    return menu === "ip dns" ? settings.dns : settings.ntp;
  }

  #get(values: Record<string, RosVal>, name: string | undefined): RosVal {
    if (name === undefined || !(name in values))
      throw new RouterOsRuntimeError(`input does not match any value of value-name: ${name ?? ""}`);
    return values[name];
  }

  /** Backups are files on the router's flash: they outlive a restore of the configuration. */
  #keepFile(file: string): void {
    const files = this.#device.tables.file;
    if (!files.some((f) => f.props.name === file)) {
      this.#device.tables.file.push({ id: `*F${files.length + 1}`, props: { name: file, contents: "" } });
    }
  }

  /**
   * Goes offline now (scheduler stopped, SSH and heartbeats fail) and boots after `rebootMs` with
   * what `next` answers (a backup's configuration) or the configuration it had.
   */
  #reboot(next: () => DeviceSnapshot | undefined): void {
    if (this.#rebooting) return;
    const kept = this.#device.snapshot();
    this.#forgetRemovedFiles();
    // The command answers before the router goes down, as RouterOS does.
    this.#rebooting = setTimeout(() => {
      const saved = next() ?? kept;
      this.#device.bootedAt = Date.now();
      this.#rebooting = undefined;
      void this.#device.boot(saved).then(() => {
        for (const file of this.#backups.keys()) this.#keepFile(file);
        this.boots += 1;
      });
    }, this.#rebootMs);
    setImmediate(() => this.#device.stop());
  }
}

const backupFile = (name: string): string => (name.endsWith(".backup") ? name : `${name}.backup`);

/** `7.15.1 (stable)` -> `7.15.1`. */
const installedVersion = (version: string): string => version.split(" ")[0] ?? version;
