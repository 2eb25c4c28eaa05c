import { router } from "../../trpc/init.ts";
import { createForward } from "./create-forward.ts";
import { deleteForward } from "./delete-forward.ts";
import { getForward } from "./get-forward.ts";
import { listForwards } from "./list-forwards.ts";

export const forwardsRouter = router({
  list: listForwards,
  get: getForward,
  create: createForward,
  delete: deleteForward,
});
