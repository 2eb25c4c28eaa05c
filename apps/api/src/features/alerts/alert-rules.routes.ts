import { router } from "../../trpc/init.ts";
import { createAlertRule } from "./create-alert-rule.ts";
import { deleteAlertRule } from "./delete-alert-rule.ts";
import { getAlertRule } from "./get-alert-rule.ts";
import { listAlertRules } from "./list-alert-rules.ts";
import { updateAlertRule } from "./update-alert-rule.ts";

/** docs/api.md "Alerts and maintenance windows". */
export const alertRulesRouter = router({
  create: createAlertRule,
  list: listAlertRules,
  get: getAlertRule,
  update: updateAlertRule,
  delete: deleteAlertRule,
});
