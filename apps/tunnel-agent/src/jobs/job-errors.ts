import { HostKeyMismatchError } from "../routeros/ssh-routeros-client.ts";

/** A failure that retrying cannot fix (bad payload, invalid value, changed host key). */
export class PermanentJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentJobError";
  }
}

/** What a payload schema offers (zod's `safeParse`). */
interface PayloadSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false };
}

/** A job's payload as its handler's schema reads it; a payload no retry can fix is a permanent failure. */
export const jobPayload = <T>(schema: PayloadSchema<T>, job: { id: string; payload: unknown }): T => {
  const parsed = schema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`job ${job.id} has a malformed payload`);
  return parsed.data;
};

export const isPermanentJobError = (error: unknown): boolean =>
  error instanceof PermanentJobError || error instanceof HostKeyMismatchError;

/** The text kept as a job's `last_error`: what went wrong, never a secret. */
export const describeJobError = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
};
