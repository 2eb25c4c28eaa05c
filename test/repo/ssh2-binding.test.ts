import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

/** docs/operations.md "Commands": the root postinstall builds ssh2's native crypto for the pinned Node. */
const root = path.resolve(import.meta.dirname, "../..");
const script = path.join(root, "scripts", "build-ssh2-binding.ts");
const require = createRequire(import.meta.url);
const cryptoDir = path.join(path.dirname(require.resolve("ssh2")), "protocol", "crypto");
const built = path.join(cryptoDir, "build", "Release", "sshcrypto.node");
const scratch = mkdtempSync(path.join(tmpdir(), "ssh2-binding-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
/** A PATH with node alone: no compiler, make, python or npm. */
const bare = path.join(scratch, "bin");
mkdirSync(bare);
symlinkSync(process.execPath, path.join(bare, "node"));
const run = (args: string[], env: NodeJS.ProcessEnv) =>
  execFileSync(process.execPath, [script, ...args], { encoding: "utf8", env });

/** Whether a command is on PATH. */
const has = (command: string) => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;

describe("ssh2's native crypto binding", () => {
  it("is what ssh2 uses wherever this machine can build it (CI: npm ci runs the postinstall)", () => {
    if (["g++", "make", "python3"].every(has)) {
      expect(existsSync(built), `${built} missing: run npm run postinstall`).toBe(true);
    }
    const ssh2Crypto = require(path.join(cryptoDir, "..", "crypto.js")) as { bindingAvailable: boolean };
    expect(ssh2Crypto.bindingAvailable).toBe(existsSync(built));
  });

  it("builds against the running Node's own headers, which need no download", () => {
    const dir = run(["--headers"], process.env).trim();
    expect(dir).not.toBe("");
    const header = readFileSync(path.join(dir, "include", "node", "node_version.h"), "utf8");
    const [major, minor, patch] = process.versions.node.split(".");
    expect(header).toContain(`#define NODE_MAJOR_VERSION ${major}\n`);
    expect(header).toContain(`#define NODE_MINOR_VERSION ${minor}\n`);
    expect(header).toContain(`#define NODE_PATCH_VERSION ${patch}\n`);
  });

  it("never fails the install: without the tools it prints one line, exits 0 and ssh2 stays JavaScript", () => {
    const sources = path.join(scratch, "crypto");
    mkdirSync(sources);
    copyFileSync(path.join(cryptoDir, "binding.gyp"), path.join(sources, "binding.gyp"));
    const out = run(["--sources", sources], { PATH: bare, HOME: scratch });
    expect(out).toMatch(/^ssh2 native crypto not built \(.+\); ssh2 uses its JavaScript ciphers\n$/);
    expect(existsSync(path.join(sources, "build"))).toBe(false);
  });

  it("runs as the root postinstall and prints one line", () => {
    const rootPackage = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    // A Node too old for TypeScript (an `--omit=dev` install without the pinned one) gets the echo.
    expect(rootPackage.scripts.postinstall).toMatch(/^node scripts\/build-ssh2-binding\.ts \|\| echo /);
    expect(
      run([], { ...process.env, PATH: bare })
        .trim()
        .split("\n"),
    ).toHaveLength(1);
  });
});
