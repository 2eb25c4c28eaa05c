import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createEmptyPostgresDatabase } from "@fleet/db/testing";
import { eventually } from "@fleet/shared/testing";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The README's recipe and the docs' marked commands, run as written with real processes
 * (`npm start`, `npm run simulate`, curl, the tRPC snippet), so they cannot rot.
 *
 * A doc marks a fenced block with an HTML comment on the line before it:
 * - `<!-- doctest: background until="<text>" -->`: the block runs in a terminal of its own and
 *   keeps running; the next block waits until its output shows `<text>`.
 * - `<!-- doctest: session -->`: the block runs in one shared shell session (variables carry
 *   over, like a terminal); any failing command fails the test.
 * - `<!-- doctest: node file=<name> -->`: the block is saved as `<name>` and run with Node (the
 *   machine's own Node 20 when present) with the session's `API` and `TOKEN`.
 * Unmarked blocks (e.g. `npm ci`) are left alone. The ports are free ones of this run, passed as
 * the variables the docs tell readers to set (PORT, HEARTBEAT_PORT, ...), so parallel runs never meet.
 */
const root = path.resolve(import.meta.dirname, "../..");
const DOCS = ["README.md", ...["api.md", "routeros.md"].map((file) => `docs/${file}`)];

interface Block {
  doc: string;
  line: number;
  kind: "background" | "session" | "node";
  until?: string;
  file?: string;
  code: string;
}

const MARKER = /^<!--\s*doctest:\s*(background|session|node)\b(.*?)-->\s*$/;

export const markedBlocks = (doc: string, markdown: string): Block[] => {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i] ?? "");
    if (!marker) continue;
    const fence = lines[i + 1] ?? "";
    if (!fence.startsWith("```"))
      throw new Error(`${doc}:${i + 1}: a doctest marker must sit right above a fenced block`);
    const end = lines.findIndex((line, j) => j > i + 1 && line.startsWith("```"));
    if (end < 0) throw new Error(`${doc}:${i + 2}: unterminated block`);
    const attrs = Object.fromEntries(
      [...(marker[2] ?? "").matchAll(/(\w+)=(?:"([^"]*)"|(\S+))/g)].map((m) => [m[1], m[2] ?? m[3]]),
    );
    blocks.push({
      doc,
      line: i + 2,
      kind: marker[1] as Block["kind"],
      ...(attrs.until ? { until: attrs.until } : {}),
      ...(attrs.file ? { file: attrs.file } : {}),
      code: lines.slice(i + 2, end).join("\n"),
    });
  }
  return blocks;
};

const freePort = async (): Promise<number> => {
  const server = net.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
};

/** A process started in a group of its own, so the whole tree (npm, node) is stopped together. */
interface Terminal {
  child: ChildProcess;
  output: () => string;
}

const terminals: Terminal[] = [];
/** On PostgreSQL a fresh database of this run: the README is a first install, not the shared `test` one. */
let database: Awaited<ReturnType<typeof createEmptyPostgresDatabase>>;

/** Exited by itself or by a signal. */
const ended = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;
const dirs: string[] = [];

const openTerminal = (command: string, env: NodeJS.ProcessEnv): Terminal => {
  const child = spawn("bash", ["-c", command], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const terminal = { child, output: () => text };
  terminals.push(terminal);
  return terminal;
};

const until = async (terminal: Terminal, text: string, what: string, timeoutMs: number): Promise<void> => {
  const seen = () => {
    if (terminal.output().includes(text)) return true;
    if (ended(terminal.child)) throw new Error(`${what} exited (${terminal.child.exitCode}):\n${terminal.output()}`);
    return false;
  };
  await eventually(seen, `"${text}" from ${what} within ${timeoutMs} ms`, timeoutMs).catch((error: Error) => {
    throw ended(terminal.child) ? error : new Error(`${error.message}:\n${terminal.output()}`);
  });
};

/** One bash session that the session blocks are typed into, like a terminal; `set -e`: a failing command ends it. */
class Session {
  readonly #child: ChildProcess;
  #text = "";
  #count = 0;

  constructor(env: NodeJS.ProcessEnv) {
    this.#child = spawn("bash", ["--norc", "--noprofile"], {
      cwd: root,
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.#child.stdout?.on("data", (chunk: Buffer) => (this.#text += chunk.toString()));
    this.#child.stderr?.on("data", (chunk: Buffer) => (this.#text += chunk.toString()));
    this.#child.stdin?.write("set -eo pipefail\n");
    terminals.push({ child: this.#child, output: () => this.#text });
  }

  /** Runs `code`; answers what it printed. Throws (with the transcript) when a command fails. */
  async run(code: string, what: string, timeoutMs: number): Promise<string> {
    const done = `__doctest_done_${++this.#count}__`;
    const from = this.#text.length;
    this.#child.stdin?.write(`${code}\necho; echo ${done}\n`);
    await until({ child: this.#child, output: () => this.#text }, done, what, timeoutMs);
    return this.#text.slice(from, this.#text.indexOf(done, from));
  }
}

afterAll(async () => {
  for (const { child } of terminals.reverse()) {
    if (ended(child) || child.pid === undefined) continue;
    const exited = once(child, "exit");
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      continue;
    }
    // A group that ignores SIGTERM for 15 s is killed; either way the wait is for its exit.
    const pid = child.pid;
    const kill = setTimeout(() => {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // The group is gone.
      }
    }, 15_000);
    await exited;
    clearTimeout(kill);
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await database?.drop();
});

describe("the README's and the docs' commands, as written", () => {
  const blocks = DOCS.flatMap((doc) => markedBlocks(doc, readFileSync(path.join(root, doc), "utf8")));

  it("finds the marked blocks: start, first session, card, simulate, forward, tRPC", () => {
    const readme = blocks.filter((b) => b.doc === "README.md");
    expect(readme.map((b) => b.kind)).toEqual(["background", "session", "session", "background", "session"]);
    expect(readme[0]?.code).toContain("npm start");
    expect(readme[3]?.code).toContain("npm run simulate -- --routers 3 --adopt");
    expect(blocks.some((b) => b.kind === "node" && b.doc === "docs/api.md")).toBe(true);
    expect(blocks.some((b) => b.doc === "docs/routeros.md")).toBe(true);
  });

  it("runs them: npm start, a first session, a card, adopted routers, a forward and curl through it, tRPC", {
    timeout: 600_000,
  }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "fleet-readme-"));
    dirs.push(dataDir);
    // Above the kernel's ephemeral ports (32768-60999: outgoing connections, e.g. to PostgreSQL, take
    // those) and below the fixed blocks other test files use (63000-63899, test/support/system-env.ts).
    const portBase = 61_000 + Math.floor(Math.random() * 40) * 50;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(await freePort()),
      HEARTBEAT_PORT: String(await freePort()),
      STRIPE_EMULATOR_PORT: String(await freePort()),
      AGENT_HEALTH_PORT: String(await freePort()),
      TUNNEL_SSH_PORT: String(await freePort()),
      ENTRY_POINT_PORTS: `${portBase}-${portBase + 49}`,
      DATA_DIR: dataDir,
      // Heartbeats every 2 s, so adopted routers and their forwards do not wait half a minute.
      HEARTBEAT_INTERVAL_MS: "2000",
      LOG_LEVEL: "warn",
    };
    database = await createEmptyPostgresDatabase();
    if (database) env.DATABASE_URL = database.url;
    delete env.NODE_ENV; // development, as on a reader's machine (vitest sets "test")
    delete env.VITEST;
    const session = new Session(env);
    const transcript: string[] = [];
    for (const block of blocks) {
      const what = `${block.doc}:${block.line} (${block.kind})`;
      if (block.kind === "background") {
        await until(openTerminal(block.code, env), block.until ?? "", what, 180_000);
      } else if (block.kind === "session") {
        transcript.push(await session.run(block.code, what, 180_000));
      } else {
        const dir = mkdtempSync(path.join(tmpdir(), "fleet-snippet-"));
        dirs.push(dir);
        // `npm install @trpc/client` of the docs, from this checkout's own packages.
        symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
        writeFileSync(path.join(dir, block.file ?? "snippet.mjs"), block.code);
        const node = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;
        transcript.push(
          await session.run(
            `(cd ${dir} && API=$API TOKEN=$TOKEN ${node} ${block.file ?? "snippet.mjs"})`,
            what,
            60_000,
          ),
        );
      }
    }
    const text = transcript.join("\n");
    // The card step: the emulator confirmed the setup intent and the card is saved.
    expect(text).toContain("succeeded");
    expect(text).toMatch(/"brand":"visa","last4":"4242"/);
    // The forward answered pending, then a request went through it to the simulated LAN.
    expect(text).toMatch(/^pending$/m);
    expect(text).toMatch(/simulated LAN device behind 127\.\d+\.\d+\.\d+: GET \//);
    // The tRPC snippet printed the account's name and the routers' ids.
    expect(text).toMatch(/Acme \[\s*'[0-9a-f-]{36}'/);
    // docs/routeros.md: the simulator's usage.
    expect(text).toContain("Usage: npm run simulate -- --routers N [options]");
  });
});
