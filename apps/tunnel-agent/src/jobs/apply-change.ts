import { randomBytes } from "node:crypto";
import { type JobRecord, ROUTER_JOB_ATTEMPTS, type RouterPulse } from "@fleet/db";
import { type Clock, isUuid, ROUTER_JOB_KINDS, type TunnelNetwork } from "@fleet/shared";
import type { Logger } from "pino";
import {
  addGuard,
  checkForUpdates,
  FIRMWARE_CHANNELS,
  guardName,
  installUpdate,
  isRouterOsVersion,
  removeGuard,
  saveBinaryBackup,
  withDoneMarker,
} from "../routeros/change-commands.ts";
import type { RouterOsClient, RouterOsConnector } from "../routeros/routeros-client.ts";
import { RouterOsCommandError } from "../routeros/ssh-routeros-client.ts";
import { describeJobError, PermanentJobError } from "./job-errors.ts";
import type { JobHandler } from "./router-job-worker.ts";
import { openRouterSession } from "./router-session.ts";
import type { StartQueue } from "./start-queue.ts";
import { tunnelTarget } from "./tunnel-target.ts";

/** One router's step of a change as the executor reads it (packages/db ChangeWorkflow.step). */
export interface ChangeStepView {
  step: { id: string; routerId: string; state: string; phase: string | null; script: string | null };
  change: {
    kind: "script" | "firmware";
    guardSeconds: number;
    firmwareChannel: string | null;
    firmwareVersion: string | null;
  };
  /** The router's tunnel address as the step was read (null once the router is gone). */
  tunnelIp: string | null;
  /** The router's SSH host key pin as the step was read (null before its first login). */
  hostKey: string | null;
}

/** What the executor needs of the change workflow (packages/db `ChangeWorkflow`). */
export interface ChangeSteps {
  step(id: string): Promise<ChangeStepView | null>;
  /** `output`: the script's, recorded with the phase that follows it. */
  setChangeRouterPhase(id: string, phase: string | null, output?: string): Promise<boolean>;
  finishChangeRouter(
    id: string,
    /** `output` null keeps what the step recorded. */
    result: { state: "succeeded" | "failed" | "reverted"; output?: string | null },
  ): Promise<unknown>;
}

export interface ChangeJobDeps {
  changes: ChangeSteps;
  /** packages/db ChangeExecutorRepository. */
  steps: {
    pulse(routerId: string): Promise<RouterPulse | null>;
    output(changeRouterId: string): Promise<string>;
  };
  connector: RouterOsConnector;
  clock: Clock;
  logger: Logger;
  sshPort: number;
  tunnelNetwork: TunnelNetwork;
  /**
   * The configuration backup of section 15 (the `router.backup` handler), taken before a script
   * runs, over the step's own SSH session when given one.
   */
  backup: (job: JobRecord, session?: RouterOsClient) => Promise<void>;
  /** Queues this step's job again, to run at `at` (waiting for a heartbeat never holds a worker). */
  requeue(routerId: string, changeRouterId: string, at: Date): Promise<void>;
  /** The start of each step (login, backups, guard, script) takes its turn here; unset: all at once. */
  starts?: Pick<StartQueue, "run">;
  /** How long a waiting step sleeps between looks (well under a heartbeat interval). */
  pollMs: number;
  /**
   * Waits in the job, up to `holdMs`, for the router's heartbeat after its script (BeatWatcher),
   * so a step is confirmed as soon as the heartbeat lands; only a longer wait goes back to the queue.
   */
  beats?: { wait(routerId: string, afterMs: number, timeoutMs: number): Promise<boolean>; holdMs: number };
}

/**
 * The resumable step of one router (`change_routers.phase`), the next thing to do. Times are epoch
 * milliseconds in base 36 so that a phase fits its column:
 * - script: (none) -> `ran:<guard added>` -> `confirm:<guard added>:<script done>`; `ran:` is
 *   written before the script is sent, so an agent killed while it ran never sends it again (the
 *   backups and the guard before it are taken again, harmlessly). `binary`, `guard` and
 *   `script:<guard added>` are still read: earlier agents wrote them.
 * - firmware: (none) -> `install:<t>:<version>` -> `reboot:<t>:<version>`; likewise the install is
 *   sent only once.
 */
type Phase =
  | { kind: "start" }
  | { kind: "binary" }
  | { kind: "guard" }
  | { kind: "script"; guardAt: number }
  | { kind: "ran"; guardAt: number }
  | { kind: "confirm"; guardAt: number; doneAt: number }
  | { kind: "install"; at: number; version: string }
  | { kind: "reboot"; at: number; version: string };

const t36 = (ms: number) => Math.floor(ms).toString(36);

export const encodePhase = (p: Phase): string | null => {
  switch (p.kind) {
    case "start":
      return null;
    case "binary":
    case "guard":
      return p.kind;
    case "script":
    case "ran":
      return `${p.kind}:${t36(p.guardAt)}`;
    case "confirm":
      return `confirm:${t36(p.guardAt)}:${t36(p.doneAt)}`;
    case "install":
    case "reboot":
      return `${p.kind}:${t36(p.at)}:${p.version}`;
  }
};

export const decodePhase = (text: string | null): Phase => {
  if (text === null || text === "") return { kind: "start" };
  const [kind, a = "", b = ""] = text.split(":");
  const time = (x: string) => {
    const n = Number.parseInt(x, 36);
    if (!Number.isFinite(n)) throw new PermanentJobError(`change step phase ${JSON.stringify(text)} is not readable`);
    return n;
  };
  switch (kind) {
    case "binary":
    case "guard":
      return { kind };
    case "script":
    case "ran":
      return { kind, guardAt: time(a) };
    case "confirm":
      return { kind, guardAt: time(a), doneAt: time(b) };
    case "install":
    case "reboot":
      return { kind, at: time(a), version: b };
    default:
      throw new PermanentJobError(`change step phase ${JSON.stringify(text)} is unknown`);
  }
};

/** A router that answered an error, or one that could not be reached (connection, timeout). */
const reachedButRefused = (error: unknown): error is RouterOsCommandError => error instanceof RouterOsCommandError;

/** Characters of a step's output kept (the workflow keeps as many). */
const OUTPUT_CHARS = 64 * 1024;

const nonce = () => randomBytes(8).toString("hex");

/** Runs one step text with its done marker: the output without the marker, and whether everything ran. */
const runMarked = async (router: RouterOsClient, script: string): Promise<{ ok: boolean; output: string }> => {
  const { text, marker } = withDoneMarker(script, nonce());
  let output: string;
  try {
    output = await router.exec(text);
  } catch (error) {
    if (!reachedButRefused(error)) throw error;
    output = error.output;
  }
  const lines = output.split(/\r?\n/);
  const ok = lines.some((l) => l.trim() === marker);
  // The router is data from outside: NUL cannot be stored in a text column, and the rest is capped.
  const kept = lines
    .filter((l) => l.trim() !== marker)
    .join("\n")
    .replaceAll("\u0000", "")
    .trim();
  return { ok, output: kept.slice(0, OUTPUT_CHARS) };
};

/**
 * `change.apply` (docs/api.md "Changes", docs/routeros.md "The guard"): one router's step of a
 * fleet change, resumable at its recorded phase. A script change: a configuration backup (section
 * 15), a binary backup, the guard, the script; then, job by job, a look until the router answers
 * over the tunnel and has sent a heartbeat after the script (guard removed: `succeeded`) or the
 * guard's time has passed (`reverted`: the router loads its backup itself). A firmware change: both
 * backups (no guard), channel, check, download and install; `succeeded` once a heartbeat reports the new version
 * within `guard_seconds`, else `failed`.
 */
export const applyChangeHandler =
  (deps: ChangeJobDeps): JobHandler =>
  async (job: JobRecord): Promise<void> => {
    const payload = job.payload as { router_id?: unknown; change_router_id?: unknown };
    const stepId = payload.change_router_id;
    const routerId = payload.router_id;
    if (typeof stepId !== "string" || !isUuid(stepId) || typeof routerId !== "string" || !isUuid(routerId)) {
      throw new PermanentJobError(`job ${job.id} has a malformed payload`);
    }
    const found = await deps.changes.step(stepId);
    if (found?.step.state !== "running" || found.step.routerId !== routerId) {
      deps.logger.info({ stepId }, "change step gone or no longer running; nothing to do");
      return;
    }
    const runner = new StepRunner(deps, found, job);
    try {
      await (found.change.kind === "firmware" ? runner.firmware() : runner.script());
    } catch (error) {
      // The last attempt (or one no retry can fix) ends the step, so that its change can go on or halt.
      if (job.attempts >= ROUTER_JOB_ATTEMPTS || error instanceof PermanentJobError) {
        await deps.changes.finishChangeRouter(stepId, {
          state: "failed",
          output: `the agent gave up after ${job.attempts} attempts: ${describeJobError(error)}`,
        });
      }
      throw error;
    } finally {
      runner.close();
    }
  };

class StepRunner {
  readonly #d: ChangeJobDeps;
  readonly #s: ChangeStepView;
  readonly #job: JobRecord;
  readonly #guard: string;
  #logger: Logger | undefined;
  #client: RouterOsClient | undefined;

  constructor(deps: ChangeJobDeps, found: ChangeStepView, job: JobRecord) {
    this.#d = deps;
    this.#s = found;
    this.#job = job;
    this.#guard = guardName(found.step.id);
  }

  /** The step's logger, made when first used (most steps say nothing: no child logger each). */
  get #log(): Logger {
    this.#logger ??= this.#d.logger.child({ changeRouterId: this.#s.step.id, routerId: this.#s.step.routerId });
    return this.#logger;
  }

  get #id() {
    return this.#s.step.id;
  }

  get #guardMs() {
    return this.#s.change.guardSeconds * 1000;
  }

  async #setPhase(phase: Phase): Promise<boolean> {
    return this.#d.changes.setChangeRouterPhase(this.#id, encodePhase(phase));
  }

  async #finish(state: "succeeded" | "failed" | "reverted", output: string | null): Promise<void> {
    await this.#d.changes.finishChangeRouter(this.#id, { state, output });
    // The bindings inline: the one line of most steps costs no child logger.
    this.#d.logger.info({ changeRouterId: this.#id, routerId: this.#s.step.routerId, state }, "change step finished");
  }

  /** One SSH session for all the steps of one job (logging in is most of a step's cost). */
  async #session<T>(work: (router: RouterOsClient) => Promise<T>): Promise<T> {
    if (!this.#client) {
      // The address and the pin were read with the step: no read of their own before the login.
      const target = tunnelTarget(this.#d, this.#s.step.routerId, this.#s.tunnelIp);
      this.#client = await openRouterSession(
        this.#d.connector,
        this.#s.hostKey === null ? target : { ...target, pinned: this.#s.hostKey },
      );
    }
    try {
      return await work(this.#client);
    } catch (error) {
      // A session that failed other than by the router's answer is not used again.
      if (!reachedButRefused(error)) this.close();
      throw error;
    }
  }

  close(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  /**
   * The configuration backup of section 15 before the change, over the session the step goes on
   * with (one login for the whole step).
   */
  async #configBackup(): Promise<void> {
    const kind = ROUTER_JOB_KINDS.backup;
    const backupJob = { ...this.#job, kind, payload: { kind, router_id: this.#s.step.routerId } };
    await this.#session((router) => this.#d.backup(backupJob, router));
  }

  /** Best effort after a failure before the script: the guard (if any) and the binary backup go. */
  async #cleanUp(): Promise<void> {
    await this.#session((router) => runMarked(router, removeGuard(this.#guard))).catch((error: unknown) => {
      this.#log.warn({ err: error }, "the guard and binary backup could not be removed");
    });
  }

  async #later(): Promise<void> {
    const at = new Date(this.#d.clock.now().getTime() + this.#d.pollMs);
    await this.#d.requeue(this.#s.step.routerId, this.#id, at);
  }

  async script(): Promise<void> {
    let phase: Phase | undefined = decodePhase(this.#s.step.phase);
    if (phase.kind !== "confirm") {
      // Logins, backups, guards and scripts take their turn (the wait counts in the step's time).
      const from = phase;
      phase = await (this.#d.starts ? this.#d.starts.run(() => this.#start(from)) : this.#start(from));
      if (!phase) return;
    }
    return this.#confirm(phase);
  }

  /** The step up to its script's confirmation: the phase to confirm, or undefined when it has ended. */
  async #start(from: Phase): Promise<Extract<Phase, { kind: "confirm" }> | undefined> {
    let phase = from;
    if (phase.kind === "start") {
      // No phase is recorded for it: an agent killed before `ran:` takes the backups again, harmless.
      await this.#configBackup();
      phase = { kind: "binary" };
    }
    if (phase.kind === "binary" || phase.kind === "guard") {
      const guardAt = this.#d.clock.now().getTime();
      // The binary backup and the guard in one command (one round trip): a mark between them says
      // which of the two failed, RouterOS stopping the script at its first error.
      const saved = `fleet-saved-${nonce()}`;
      const text = `${saveBinaryBackup(this.#guard)}\n:put "${saved}"\n${addGuard(this.#guard, this.#s.change.guardSeconds)}`;
      const added = await this.#session((router) => runMarked(router, text));
      const lines = added.output.split("\n");
      const backedUp = lines.some((l) => l.trim() === saved);
      const output = lines
        .filter((l) => l.trim() !== saved)
        .join("\n")
        .trim();
      if (!added.ok) {
        await this.#cleanUp();
        await this.#finish(
          "failed",
          backedUp ? `the guard could not be installed: ${output}` : `the binary backup failed: ${output}`,
        );
        return;
      }
      phase = { kind: "script", guardAt };
    }
    if (phase.kind === "script") {
      const guardAt = phase.guardAt;
      // Recorded before the script is sent: from here on it is never sent again.
      if (!(await this.#setPhase({ kind: "ran", guardAt }))) return;
      let result: { ok: boolean; output: string };
      try {
        result = await this.#session((router) => runMarked(router, this.#s.step.script ?? ""));
      } catch (error) {
        // A script that cuts the router off cannot answer: the guard decides.
        this.#log.warn({ err: error }, "no answer to the change script; waiting for the router or its guard");
        result = { ok: true, output: "" };
      }
      if (!result.ok) {
        const removed = await this.#session((router) => runMarked(router, removeGuard(this.#guard))).catch(
          (error: unknown) => ({ ok: false, output: (error as Error).message }),
        );
        const note = removed.ok ? "" : "\nthe guard could not be removed: the router will restore its backup";
        await this.#finish("failed", `${result.output}${note}`);
        return;
      }
      phase = { kind: "confirm", guardAt, doneAt: this.#d.clock.now().getTime() };
      // The output and the phase in one write.
      if (!(await this.#d.changes.setChangeRouterPhase(this.#id, encodePhase(phase), result.output))) return;
    }
    if (phase.kind === "ran") {
      this.#log.warn("the agent stopped while the change script ran; it is not sent again");
      phase = { kind: "confirm", guardAt: phase.guardAt, doneAt: this.#d.clock.now().getTime() };
      if (!(await this.#setPhase(phase))) return;
    }
    if (phase.kind === "confirm") return phase;
    throw new PermanentJobError(`change step phase ${this.#s.step.phase} does not belong to a script change`);
  }

  /** Removes the guard once the router answers over the tunnel and has beaten since the script. */
  async #confirm(phase: Extract<Phase, { kind: "confirm" }>): Promise<void> {
    const now = this.#d.clock.now().getTime();
    if (now >= phase.guardAt + this.#guardMs) {
      const output = await this.#d.steps.output(this.#id);
      const note = `no heartbeat and answer over the tunnel within guard_seconds (${this.#s.change.guardSeconds}); the router restores its backup`;
      return this.#finish("reverted", output ? `${output}\n${note}` : note);
    }
    let beat: boolean;
    if (this.#d.beats) {
      // The watcher's one read serves every waiting step: no read of this router's own first.
      const timeoutMs = Math.min(this.#d.beats.holdMs, phase.guardAt + this.#guardMs - now);
      beat = await this.#d.beats.wait(this.#s.step.routerId, phase.doneAt, timeoutMs);
    } else {
      const pulse = await this.#d.steps.pulse(this.#s.step.routerId);
      beat = pulse?.lastSeenAt !== null && pulse?.lastSeenAt !== undefined && pulse.lastSeenAt.getTime() > phase.doneAt;
    }
    if (beat) {
      const removed = await this.#session((router) => runMarked(router, removeGuard(this.#guard))).catch(
        () => undefined,
      );
      const left = removed?.ok ? removed.output.split("\n").at(-1)?.trim() : undefined;
      if (left === "0") return this.#finish("succeeded", null);
    }
    await this.#later();
  }

  async firmware(): Promise<void> {
    let phase = decodePhase(this.#s.step.phase);
    const channel = this.#s.change.firmwareChannel;
    if (phase.kind === "start") {
      const known = FIRMWARE_CHANNELS.find((c) => c === channel);
      if (!known) return this.#finish("failed", `unknown firmware channel ${JSON.stringify(channel)}`);
      // The same safety net as a script's, without the guard: a configuration backup and a binary
      // backup, left on the router under the step's name as the way back to the old version.
      await this.#configBackup();
      const saved = await this.#session((router) => runMarked(router, saveBinaryBackup(this.#guard)));
      if (!saved.ok) return this.#finish("failed", `the binary backup failed: ${saved.output}`);
      const checked = await this.#session((router) => runMarked(router, checkForUpdates(known)));
      const [installed = "", latest = ""] = checked.output.split("\n").map((l) => l.trim());
      if (!checked.ok || !isRouterOsVersion(latest)) {
        return this.#finish("failed", `checking for updates on ${known} failed: ${checked.output}`);
      }
      const wanted = this.#s.change.firmwareVersion;
      if (wanted && wanted !== latest) {
        return this.#finish("failed", `the ${known} channel offers ${latest}, not ${wanted}`);
      }
      if (installed === latest) return this.#finish("succeeded", `already running ${latest}`);
      phase = { kind: "install", at: this.#d.clock.now().getTime(), version: latest };
      if (!(await this.#setPhase(phase))) return;
      let install: { ok: boolean; output: string } | undefined;
      try {
        install = await this.#session((router) => runMarked(router, installUpdate()));
      } catch (error) {
        // The router may go down for its reboot before it answers.
        this.#log.info({ err: error }, "no answer to the install; waiting for the router's heartbeat");
      }
      if (install && !install.ok) return this.#finish("failed", `the update was refused: ${install.output}`);
      phase = { kind: "reboot", at: phase.at, version: latest };
      if (!(await this.#setPhase(phase))) return;
    }
    if (phase.kind === "install") {
      this.#log.warn("the agent stopped while the update was installed; it is not sent again");
      phase = { kind: "reboot", at: phase.at, version: phase.version };
      if (!(await this.#setPhase(phase))) return;
    }
    if (phase.kind !== "reboot") {
      throw new PermanentJobError(`change step phase ${this.#s.step.phase} does not belong to a firmware change`);
    }
    const pulse = await this.#d.steps.pulse(this.#s.step.routerId);
    const reported = pulse?.softwareVersion.split(" ")[0];
    if (pulse?.lastSeenAt && pulse.lastSeenAt.getTime() > phase.at && reported === phase.version) {
      return this.#finish("succeeded", `running ${phase.version}`);
    }
    if (this.#d.clock.now().getTime() >= phase.at + this.#guardMs) {
      return this.#finish(
        "failed",
        `no heartbeat reporting ${phase.version} within guard_seconds (${this.#s.change.guardSeconds}); last reported ${reported || "nothing"}`,
      );
    }
    await this.#later();
  }
}
