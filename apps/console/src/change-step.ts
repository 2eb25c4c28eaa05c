/**
 * A router's step in a change (`phase` of `changes.routers`) in words. The phase is the tunnel
 * agent's resumption record, `<kind>[:<times in base 36>][:<version>]` (apps/tunnel-agent
 * jobs/apply-change.ts); only its kind and version mean something to a person.
 */
const STEP_LABELS: Record<string, string> = {
  binary: "Backing up",
  guard: "Guard set",
  script: "Sending the script",
  ran: "Script sent",
  confirm: "Confirming",
  install: "Installing",
  reboot: "Rebooting into",
};

/** `state`: the step's (`changes.routers`); an ended step has no step left to name, its state says how it ended. */
export const stepLabel = (phase: string | null, state?: string): string => {
  if (!phase || (state !== undefined && state !== "pending" && state !== "running")) return "—";
  const parts = phase.split(":");
  const kind = parts[0] ?? "";
  const label = STEP_LABELS[kind] ?? kind;
  return kind === "install" || kind === "reboot" ? `${label} ${parts[2] ?? ""}`.trim() : label;
};
