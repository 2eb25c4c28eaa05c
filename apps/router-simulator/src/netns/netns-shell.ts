import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Runs a command (in `namespace` when given); throws with its stderr. */
export const sh = async (
  command: string,
  args: readonly string[],
  namespace?: string,
  input?: string,
): Promise<string> => {
  const [file, argv] = namespace ? ["ip", ["netns", "exec", namespace, command, ...args]] : [command, [...args]];
  try {
    if (input === undefined) return (await run(file, argv)).stdout;
    return await new Promise<string>((resolve, reject) => {
      const child = execFile(file, argv, (error, stdout) => (error ? reject(error) : resolve(stdout)));
      child.stdin?.end(input);
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${[file, ...argv].join(" ")}: ${stderr || (error as Error).message}`);
  }
};

/** Network namespaces whose names start with `prefix` and whose owning process (the pid in the name) is gone. */
export const staleNamespaces = async (prefix: string): Promise<string[]> => {
  const list = await sh("ip", ["netns", "list"]);
  return list
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter((name) => name.startsWith(`${prefix}-`))
    .filter((name) => {
      const pid = Number.parseInt(name.slice(prefix.length + 1).split("-")[0] ?? "", 36);
      if (!Number.isSafeInteger(pid) || pid <= 0) return true;
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
};

/** Deletes namespaces (their interfaces, wireguard-go's tun devices included, go with them). */
export const deleteNamespaces = async (names: readonly string[]): Promise<void> => {
  for (const name of names) await sh("ip", ["netns", "del", name]).catch(() => {});
};
