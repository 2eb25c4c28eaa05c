import { CHANGE_ADVANCE_QUEUE, changeAdvanceQueue, ChangeWorkflow } from "@fleet/db";
import { ChangesService } from "../features/changes/changes.service.ts";
import type { Wired, WiringContext } from "./wiring.ts";

export interface ChangesServices {
  changes: ChangesService;
}

/**
 * Fleet changes (docs/api.md "Changes"): the service behind `/api/changes` and the dispatcher's
 * worker (`change.advance` on the process's job engine; every API process takes a share, the
 * change's row lock keeps one change's steps one at a time).
 */
export const wireChanges = async ({ db, jobs, clock, logger }: WiringContext): Promise<Wired<ChangesServices>> => {
  const workflow = new ChangeWorkflow(db, jobs, clock);
  await jobs.defineQueue(changeAdvanceQueue());
  const log = logger.child({ part: "change-dispatcher" });
  await jobs.work<{ change_id?: unknown }>(
    CHANGE_ADVANCE_QUEUE,
    { localConcurrency: 2, pollingIntervalSeconds: 1 },
    async (job) => {
      if (typeof job.data.change_id !== "string") return;
      const change = await workflow.advance(job.data.change_id);
      log.debug({ change_id: job.data.change_id, state: change?.state }, "change advanced");
    },
  );
  return {
    services: { changes: new ChangesService({ db, jobs, workflow, clock }) },
    // The dispatcher's safety net: a change whose step job was lost moves on within a minute.
    schedules: [{ queue: "change.sweep", cron: "* * * * *", run: () => workflow.sweep() }],
    close: () => jobs.offWork(CHANGE_ADVANCE_QUEUE),
  };
};
