/**
 * The simulated routers of `npm run bench:changes`, in a child process of their own: their SSH
 * servers, script interpreters and heartbeats are the routers' CPU, not the system's, so they must
 * not share the system's event loop (bench/changes-bench.ts). Driven over IPC: `adopt` (the enrolled
 * routers), `reset` before a run, `collect` after it (per router timestamps, epoch ms), `stop`.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { AdoptedRouter } from "@fleet/router-simulator/adoption/adopted-router";
import type { HttpRequest, HttpResponse } from "@fleet/router-simulator/routeros/script/routeros-device";
import { startSimulatedRouterOs } from "@fleet/router-simulator/routeros/simulated-routeros";

/** What the simulator saw of one router during a run (epoch ms; durations in ms). */
export interface RouterTimes {
  /** Time spent in the router's interpreter (its own work). */
  routerMs: number;
  /** The agent's SSH login accepted (first of the run). */
  loginAt?: number;
  /** `/export terse` (the configuration backup) answered. */
  exportAt?: number;
  /** Each script the agent sent (binary backup, guard, the change, guard removal): start and end. */
  scripts: Array<{ start: number; end: number; change: boolean }>;
  scriptDoneAt?: number;
  /** The first heartbeat sent after the change script ended. */
  heartbeatAfterScriptAt?: number;
}

export interface EnrolledRouter {
  index: number;
  routerId: string;
  adoptionCommand: string;
  tunnelIp: string;
}

export type ToRouters =
  | { type: "adopt"; sshPort: number; mark: string; routers: EnrolledRouter[] }
  | { type: "reset" }
  | { type: "collect" }
  /** Starts a CPU profile of the routers' process, written to `file` at `stop`. */
  | { type: "profile"; file: string }
  | { type: "stop" };

export type FromRouters =
  | { type: "adopted" }
  | { type: "reset" }
  | { type: "profiling" }
  | { type: "times"; times: Array<[string, RouterTimes]>; cpuMs: number };

const send = (message: FromRouters) => process.send?.(message);
const times = new Map<string, RouterTimes>();
const routers: AdoptedRouter[] = [];
const closers: Array<() => Promise<void>> = [];
let cpu = process.cpuUsage();
let profiler: { session: Session; file: string } | undefined;

/** Pastes the adoption command again after a failure (a loaded machine times requests out). */
const adoptWithRetries = async (router: AdoptedRouter) => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await router.adopt();
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
};

const adopt = async (sshPort: number, mark: string, enrolled: EnrolledRouter[]) => {
  const adoptions: Array<Promise<void>> = [];
  for (const e of enrolled) {
    const router = new AdoptedRouter({
      index: e.index,
      routerId: e.routerId,
      adoptionCommand: e.adoptionCommand,
      tunnelIp: e.tunnelIp,
      bindTunnelIp: false,
      identity: `bench-${e.index}`,
    });
    const t: RouterTimes = { routerMs: 0, scripts: [] };
    times.set(router.routerId, t);
    const options = router.device.options as { http: (request: HttpRequest) => Promise<HttpResponse> };
    const http = options.http;
    options.http = async (request) => {
      // Only a heartbeat sent after the script ended confirms it (one already on its way does not).
      const sentAt = Date.now();
      const response = await http(request);
      const done = t.scriptDoneAt;
      if (done !== undefined && sentAt > done && t.heartbeatAfterScriptAt === undefined)
        t.heartbeatAfterScriptAt = sentAt;
      return response;
    };
    const ros = await startSimulatedRouterOs({
      tunnelIp: router.tunnelIp,
      sshPort,
      authorize: (user, key, address) => {
        const ok = router.authorize(user, key, address);
        if (ok) t.loginAt ??= Date.now();
        return ok;
      },
      configuration: router.configuration,
      reachable: router.reachable,
      exportText: (standard) => {
        t.exportAt ??= Date.now();
        return standard;
      },
      script: async (text) => {
        const start = Date.now();
        const started = performance.now();
        const out = await router.script(text);
        t.routerMs += performance.now() - started;
        const change = text.includes(mark);
        t.scripts.push({ start, end: Date.now(), change });
        if (change) t.scriptDoneAt = Date.now();
        return out;
      },
    });
    closers.push(() => ros.close());
    routers.push(router);
    // A few adoptions at once: one after the other, 1,000 take longer than the runs.
    adoptions.push(adoptWithRetries(router));
    if (adoptions.length >= 8) await Promise.all(adoptions.splice(0));
  }
  await Promise.all(adoptions);
};

process.on("message", (message: ToRouters) => {
  void (async () => {
    switch (message.type) {
      case "adopt":
        await adopt(message.sshPort, message.mark, message.routers);
        return send({ type: "adopted" });
      case "reset":
        for (const t of times.values()) {
          t.routerMs = 0;
          t.scripts = [];
          delete t.loginAt;
          delete t.exportAt;
          delete t.scriptDoneAt;
          delete t.heartbeatAfterScriptAt;
        }
        cpu = process.cpuUsage();
        return send({ type: "reset" });
      case "collect": {
        const used = process.cpuUsage(cpu);
        return send({ type: "times", times: [...times], cpuMs: (used.user + used.system) / 1000 });
      }
      case "profile": {
        const session = new Session();
        session.connect();
        await session.post("Profiler.enable");
        await session.post("Profiler.start");
        profiler = { session, file: message.file };
        return send({ type: "profiling" });
      }
      case "stop":
        if (profiler) {
          const { profile } = await profiler.session.post("Profiler.stop");
          writeFileSync(profiler.file, JSON.stringify(profile));
        }
        for (const router of routers) router.stop();
        for (const close of closers) await close();
        process.exit(0);
    }
  })();
});
