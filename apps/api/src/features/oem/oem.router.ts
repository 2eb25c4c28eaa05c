import { router } from "../../trpc/init.ts";
import { getRouterOem } from "../routers/get-router-oem.ts";

/**
 * Temporary home of `routers.oem` until the routers feature router exists; then `oem:
 * getRouterOem` moves into it and this file goes away.
 */
export const oemRouter = router({
  oem: getRouterOem,
});
