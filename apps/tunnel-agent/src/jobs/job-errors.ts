import { HostKeyMismatchError } from "../routeros/ssh-routeros-client.ts";

/** A failure that retrying cannot fix (bad payload, invalid value, changed host key). */
export class PermanentJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentJobError";
  }
}

export const isPermanentJobError = (error: unknown): boolean =>
  error instanceof PermanentJobError || error instanceof HostKeyMismatchError;

/** The text kept as a job's `last_error`: what went wrong, never a secret. */
export const describeJobError = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
};
