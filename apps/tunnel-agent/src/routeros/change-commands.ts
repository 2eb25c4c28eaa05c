/**
 * The RouterOS commands of a fleet change's executor (docs/routeros.md "The guard"). Every name is
 * built from the step's id (hex digits only) and every number is an integer checked here, so no
 * value from a tenant or a router reaches these commands; the change's own script is the
 * tenant's, rendered by the API (placeholders quoted) and sent as it is.
 */

/** RouterOS update channels a firmware change may name (docs/api.md "Changes"). */
export const FIRMWARE_CHANNELS = ["stable", "long-term"] as const;

/** `fleet-change-<32 hex digits>`: the binary backup's and the guard scheduler's name for one router step. */
export const guardName = (changeRouterId: string): string => {
  const hex = changeRouterId.replaceAll("-", "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error("a change step id is a UUID");
  return `fleet-change-${hex}`;
};

/**
 * The last line of every step the executor sends: RouterOS stops a script at its first error, so
 * the marker is printed only when everything before it ran. The nonce is new for each run.
 */
export const withDoneMarker = (script: string, nonce: string): { text: string; marker: string } => {
  if (!/^[0-9a-f]{8,64}$/.test(nonce)) throw new Error("the nonce is hex");
  const marker = `fleet-done-${nonce}`;
  return { text: `${script.replace(/\s+$/, "")}\n:put "${marker}"`, marker };
};

/** A RouterOS binary backup of the whole configuration, unencrypted (it never leaves the router). */
export const saveBinaryBackup = (name: string): string => `/system backup save name=${name} dont-encrypt=yes`;

/**
 * The guard: a scheduler whose first run, `guardSeconds` after it is added, loads the backup
 * (RouterOS reboots into it). An earlier guard of the same step is removed first, so a retried
 * step leaves one.
 */
export const addGuard = (name: string, guardSeconds: number): string => {
  if (!Number.isInteger(guardSeconds) || guardSeconds < 1 || guardSeconds > 86_400) throw new Error("guard seconds");
  return [
    `/system scheduler remove [find name="${name}"]`,
    `/system scheduler add name="${name}" interval=${guardSeconds}s on-event="/system backup load name=${name}.backup password=\\"\\""`,
  ].join("\n");
};

/**
 * Removes the guard and the binary backup it would load (after a confirmed success or a failure
 * nothing on the router refers to them) and answers how many schedulers of that name are left (0
 * when confirmed). The file's removal cannot stop the script: the guard's answer is what counts.
 */
export const removeGuard = (name: string): string =>
  [
    `/system scheduler remove [find name="${name}"]`,
    `:do { /file remove [find name="${name}.backup"] } on-error={}`,
    `:put [:len [/system scheduler find name="${name}"]]`,
  ].join("\n");

/** Checks the channel: prints the installed and the offered version, one a line. */
export const checkForUpdates = (channel: (typeof FIRMWARE_CHANNELS)[number]): string => {
  if (!FIRMWARE_CHANNELS.includes(channel)) throw new Error("unknown channel");
  return [
    `/system package update set channel=${channel}`,
    "/system package update check-for-updates",
    ":put [/system package update get installed-version]",
    ":put [/system package update get latest-version]",
  ].join("\n");
};

/** Downloads and installs what the channel offers: the router reboots into it. */
export const installUpdate = (): string =>
  ["/system package update download", "/system package update install"].join("\n");

/** A RouterOS version as a router may print it (`7.16.2`, `7.17rc3`); anything else is refused. */
export const isRouterOsVersion = (text: string): boolean =>
  /^\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:(?:rc|beta)\d{1,3})?$/.test(text);
