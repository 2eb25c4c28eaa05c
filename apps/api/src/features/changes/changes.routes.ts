import { router } from "../../trpc/init.ts";
import { approveChange } from "./approve-change.ts";
import { cancelChange } from "./cancel-change.ts";
import { createChange } from "./create-change.ts";
import { getChange } from "./get-change.ts";
import { listChangeRouters } from "./list-change-routers.ts";
import { listChanges } from "./list-changes.ts";
import { pauseChange } from "./pause-change.ts";
import { previewChange } from "./preview-change.ts";
import { resumeChange } from "./resume-change.ts";

/** docs/api.md "Changes". */
export const changesRouter = router({
  create: createChange,
  list: listChanges,
  get: getChange,
  routers: listChangeRouters,
  preview: previewChange,
  approve: approveChange,
  pause: pauseChange,
  resume: resumeChange,
  cancel: cancelChange,
});
