/**
 * Polls `check` until it returns something truthy and returns that value. For state that
 * propagates (over the wire, across a queue, through a flush), never for time-dependent rules,
 * which tests drive with a `ManualClock` instead. Fails with `what` when the time runs out.
 */
export const eventually = async <T>(
  check: () => T | Promise<T>,
  what = "the condition",
  timeoutMs = 15_000,
): Promise<NonNullable<T>> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};
