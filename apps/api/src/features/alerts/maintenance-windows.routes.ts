import { router } from "../../trpc/init.ts";
import { createMaintenanceWindow } from "./create-maintenance-window.ts";
import { deleteMaintenanceWindow } from "./delete-maintenance-window.ts";
import { getMaintenanceWindow } from "./get-maintenance-window.ts";
import { listMaintenanceWindows } from "./list-maintenance-windows.ts";

/** docs/api.md "Alerts and maintenance windows". */
export const maintenanceWindowsRouter = router({
  create: createMaintenanceWindow,
  list: listMaintenanceWindows,
  get: getMaintenanceWindow,
  delete: deleteMaintenanceWindow,
});
