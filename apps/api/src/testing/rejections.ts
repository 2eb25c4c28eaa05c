import { AppError } from "@fleet/shared";

/** The AppError a promise rejects with; anything else (or no rejection) fails the test. */
export const rejection = async (promise: Promise<unknown>): Promise<AppError> => {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error("expected a rejection");
};
