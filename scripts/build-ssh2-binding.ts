/**
 * The root `postinstall` (docs/operations.md "Commands"): builds ssh2's optional native crypto
 * binding for the Node that runs this script, which halves ssh2's CPU per session (docs/scale.md
 * "The model"). ssh2's own install script stays denied (`allowScripts`): it builds against
 * npm's `nodedir`, which on a machine with a system Node is that Node's headers, not the pinned
 * Node 24's. Here node-gyp gets the running Node's own headers (the `node-<platform>-<arch>`
 * package beside the pinned `node`, or `<prefix>/include/node` as in the official image), so the
 * build needs no download. It never fails the install: without a compiler, headers or node-gyp
 * it prints one line and ssh2 keeps its JavaScript ciphers. Run it again: `npm run postinstall`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { parseArgs } from "node:util";

const root = path.resolve(import.meta.dirname, "..");

/** Where ssh2 keeps the binding's sources; the built file is `build/Release/sshcrypto.node` under it. */
const ssh2CryptoDir = (): string | undefined => {
  try {
    return path.join(
      path.dirname(createRequire(path.join(root, "package.json")).resolve("ssh2")),
      "protocol",
      "crypto",
    );
  } catch {
    return undefined;
  }
};

/** The version `<nodedir>/include/node/node_version.h` declares, or undefined. */
const headersVersion = (nodedir: string): string | undefined => {
  let text: string;
  try {
    text = readFileSync(path.join(nodedir, "include", "node", "node_version.h"), "utf8");
  } catch {
    return undefined;
  }
  const part = (name: string) => new RegExp(`#define NODE_${name}_VERSION (\\d+)`).exec(text)?.[1];
  const [major, minor, patch] = [part("MAJOR"), part("MINOR"), part("PATCH")];
  return major && minor && patch ? `${major}.${minor}.${patch}` : undefined;
};

/**
 * The directory whose `include/node` holds this Node's headers: its install prefix
 * (`/usr/local/bin/node` -> `/usr/local`), else the platform package the `node` npm package
 * installed (its bin/node is a hard link). Headers of another version do not count.
 */
const nodeHeadersDir = (): string | undefined => {
  const candidates = [
    path.resolve(path.dirname(process.execPath), ".."),
    path.join(root, "node_modules", "node", "node_modules", `node-${process.platform}-${process.arch}`),
  ];
  return candidates.find((dir) => headersVersion(dir) === process.versions.node);
};

/** npm's own node-gyp: npm names it to the scripts it runs; else the one beside `npm` on PATH. */
const nodeGyp = (env: NodeJS.ProcessEnv): string | undefined => {
  if (env.npm_config_node_gyp && existsSync(env.npm_config_node_gyp)) return env.npm_config_node_gyp;
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    const npm = path.join(dir, "npm");
    if (!dir || !existsSync(npm)) continue;
    const gyp = path.resolve(path.dirname(realpathSync(npm)), "..", "node_modules", "node-gyp", "bin", "node-gyp.js");
    if (existsSync(gyp)) return gyp;
  }
  return undefined;
};

/** Whether the binding in `cryptoDir` loads in this Node (a build for another Node's ABI throws). */
const bindingLoads = (cryptoDir: string): boolean => {
  try {
    createRequire(import.meta.url)(path.join(cryptoDir, "build", "Release", "sshcrypto.node"));
    return true;
  } catch {
    return false;
  }
};

const notBuilt = (reason: string) => `ssh2 native crypto not built (${reason}); ssh2 uses its JavaScript ciphers`;

/** Builds the binding in `cryptoDir` (unless one that loads is there); returns the one line to print. */
const buildSsh2Binding = (cryptoDir = ssh2CryptoDir(), env = process.env): string => {
  if (!cryptoDir || !existsSync(path.join(cryptoDir, "binding.gyp"))) return notBuilt("ssh2 is not installed here");
  if (bindingLoads(cryptoDir)) return "ssh2 native crypto: already built for this Node";
  const nodedir = nodeHeadersDir();
  if (!nodedir) return notBuilt(`no headers of Node ${process.version}`);
  const gyp = nodeGyp(env);
  if (!gyp) return notBuilt("no npm with node-gyp on PATH");
  // node-gyp lets npm_config_* variables override its command line: npm passes the user's
  // `nodedir` (a system Node's headers) that way, so the ones naming the target go.
  const childEnv = Object.fromEntries(
    Object.entries(env).filter(
      ([key]) => !/^npm_(package_)?config_(node_gyp_)?(nodedir|target|dist_url|runtime)$/i.test(key),
    ),
  );
  const result = spawnSync(
    process.execPath,
    [
      gyp,
      "rebuild",
      `--nodedir=${nodedir}`,
      `--target=${process.versions.node}`,
      // ssh2's binding.gyp picks its OpenSSL code by the major version Node links.
      `--real_openssl_major=${process.versions.openssl.split(".")[0]}`,
    ],
    { cwd: cryptoDir, env: childEnv, encoding: "utf8", timeout: 300_000 },
  );
  if (result.status === 0 && bindingLoads(cryptoDir)) {
    return `ssh2 native crypto: built for Node ${process.version}`;
  }
  const output = `${result.stderr ?? ""}\n${result.stdout ?? ""}`;
  const reason =
    output
      .split("\n")
      .find((line) => /not found|No such file|error:|Error:/.test(line))
      ?.replace(/^gyp ERR! /, "")
      .trim()
      .slice(0, 160) ?? (result.error ? result.error.message : `node-gyp exited ${result.status}`);
  return notBuilt(reason);
};

// `--headers`: print the headers' directory the build would use; `--sources DIR`: build in DIR
// instead of the installed ssh2's (test/repo/ssh2-binding.test.ts).
try {
  const { values } = parseArgs({ options: { headers: { type: "boolean" }, sources: { type: "string" } } });
  console.log(values.headers ? (nodeHeadersDir() ?? "") : buildSsh2Binding(values.sources));
} catch (error) {
  console.log(notBuilt(String(error).slice(0, 160)));
}
