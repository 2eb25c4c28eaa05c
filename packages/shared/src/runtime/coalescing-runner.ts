/**
 * One pass at a time: a call while a pass runs starts nothing new, it asks for one more pass after
 * the current one and shares its promise. Batched flushes and periodic syncs use it so a burst of
 * triggers costs at most one extra pass.
 */
export interface CoalescingRunner {
  run(): Promise<void>;
  /** The pass in progress (with any passes it was asked to repeat), if any. */
  current(): Promise<void> | undefined;
}

export const coalescingRunner = (
  pass: () => Promise<void>,
  repeatWhile: () => boolean = () => true,
): CoalescingRunner => {
  let running: Promise<void> | undefined;
  let requested = false;
  return {
    run: () => {
      if (running) {
        requested = true;
        return running;
      }
      // Started from a microtask so `running` is set before the pass can call `run()` itself.
      running = Promise.resolve()
        .then(async () => {
          do {
            requested = false;
            await pass();
          } while (requested && repeatWhile());
        })
        .finally(() => {
          running = undefined;
        });
      return running;
    },
    current: () => running,
  };
};
