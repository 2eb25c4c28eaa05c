import { accountRouter } from "../features/account/account.routes.ts";
import { apiKeysRouter } from "../features/api-keys/api-keys.routes.ts";
import { auditLogRouter } from "../features/audit-log/audit-log.routes.ts";
import { authRouter } from "../features/auth/auth.routes.ts";
import { accessRouter } from "../features/access/access.routes.ts";
import { availabilityRouter } from "../features/availability/availability.routes.ts";
import { backupsRouter } from "../features/backups/backups.routes.ts";
import { forwardsRouter } from "../features/forwards/forwards.routes.ts";
import { invitationsRouter } from "../features/invitations/invitations.routes.ts";
import { meRouter } from "../features/me/me.routes.ts";
import { invoicesRouter } from "../features/invoices/invoices.routes.ts";
import { membersRouter } from "../features/members/members.routes.ts";
import { organizationsRouter } from "../features/organizations/organizations.routes.ts";
import { paymentMethodsRouter } from "../features/payment-methods/payment-methods.routes.ts";
import { routersRouter } from "../features/routers/routers.routes.ts";
import { teamsRouter } from "../features/teams/teams.routes.ts";
import { webhooksRouter } from "../features/webhooks/webhooks.routes.ts";
import { alertRulesRouter } from "../features/alerts/alert-rules.routes.ts";
import { maintenanceWindowsRouter } from "../features/alerts/maintenance-windows.routes.ts";
import { notificationChannelsRouter } from "../features/alerts/notification-channels.routes.ts";
import { changesRouter } from "../features/changes/changes.routes.ts";
import { healthThresholdsRouter } from "../features/health/health-thresholds.routes.ts";
import { router } from "./init.ts";

/** The one procedure set behind tRPC (/trpc), REST (spec paths) and /openapi.json. */
export const appRouter = router({
  auth: authRouter,
  account: accountRouter,
  paymentMethods: paymentMethodsRouter,
  invoices: invoicesRouter,
  forwards: forwardsRouter,
  routers: routersRouter,
  apiKeys: apiKeysRouter,
  auditLog: auditLogRouter,
  webhooks: webhooksRouter,
  notificationChannels: notificationChannelsRouter,
  alertRules: alertRulesRouter,
  maintenanceWindows: maintenanceWindowsRouter,
  healthThresholds: healthThresholdsRouter,
  availability: availabilityRouter,
  backups: backupsRouter,
  access: accessRouter,
  organizations: organizationsRouter,
  members: membersRouter,
  invitations: invitationsRouter,
  teams: teamsRouter,
  me: meRouter,
  changes: changesRouter,
});

export type AppRouter = typeof appRouter;
