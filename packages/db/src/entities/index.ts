import {
  AlertEvent,
  AlertPending,
  AlertRouterState,
  AlertRule,
  AlertRuleChannel,
  AlertStorm,
  MaintenanceWindow,
  NotificationChannel,
  NotificationDelivery,
} from "./alerts.entity.ts";
import { ApiKey } from "./api-key.entity.ts";
import { Change, ChangeRouter } from "./change.entity.ts";
import { AuditLogEntry } from "./audit-log-entry.entity.ts";
import { BillingAccount } from "./billing-account.entity.ts";
import {
  BillingInvoice,
  BillingMirrorSync,
  BillingPaymentMethod,
  StripeWebhookEvent,
} from "./billing-mirror.entity.ts";
import { BillingSubscription } from "./billing-subscription.entity.ts";
import { ClusterLease } from "./cluster-lease.entity.ts";
import { Forward } from "./forward.entity.ts";
import { OrganizationHealthThresholds, RouterHealthState, RouterHealthThresholds } from "./health-threshold.entity.ts";
import { HeartbeatCoverage } from "./heartbeat-coverage.entity.ts";
import { HeartbeatDaemon } from "./heartbeat-daemon.entity.ts";
import { OemProduct } from "./oem-product.entity.ts";
import { OrganizationExternalId } from "./organization-external-id.entity.ts";
import { Invitation } from "./invitation.entity.ts";
import { OrganizationMember } from "./organization-member.entity.ts";
import { Organization } from "./organization.entity.ts";
import { RouterAccess } from "./router-access.entity.ts";
import { RouterAdoption } from "./router-adoption.entity.ts";
import { RouterBackupState, RouterConfigBackup } from "./router-config-backup.entity.ts";
import { RouterDowntimeHour } from "./router-downtime-hour.entity.ts";
import { RouterFault } from "./router-fault.entity.ts";
import { SshHostKey } from "./ssh-host-key.entity.ts";
import { Router } from "./router.entity.ts";
import { RouterLiveness } from "./router-liveness.entity.ts";
import {
  RouterHealthStaged,
  RouterInterfacesState,
  RouterResourceHourly,
  RouterResourceSamples,
  RouterTrafficHourly,
  RouterTrafficSamples,
} from "./router-health-series.entity.ts";
import { RouterWireguardPeer } from "./router-wireguard-peer.entity.ts";
import { Team } from "./team.entity.ts";
import { User } from "./user.entity.ts";
import { WebhookDelivery } from "./webhook-delivery.entity.ts";
import { Webhook } from "./webhook.entity.ts";
import { TunnelAddress } from "./tunnel-address.entity.ts";
import { RateLimitCounter } from "./rate-limit-counter.entity.ts";
import { AuthSession } from "./auth-session.entity.ts";
import { OidcLogin } from "./oidc-login.entity.ts";
import { UserIdentity } from "./user-identity.entity.ts";

/** Every entity, listed explicitly (no folder discovery): add new ones here. */
export const ENTITIES = [
  User,
  Organization,
  OrganizationExternalId,
  OrganizationMember,
  Invitation,
  Team,
  BillingAccount,
  BillingSubscription,
  BillingPaymentMethod,
  BillingInvoice,
  BillingMirrorSync,
  StripeWebhookEvent,
  Router,
  RouterAdoption,
  RouterFault,
  RouterDowntimeHour,
  HeartbeatCoverage,
  HeartbeatDaemon,
  ClusterLease,
  OemProduct,
  Forward,
  SshHostKey,
  RouterWireguardPeer,
  ApiKey,
  AuditLogEntry,
  Webhook,
  WebhookDelivery,
  TunnelAddress,
  RateLimitCounter,
  RouterConfigBackup,
  RouterBackupState,
  RouterAccess,
  RouterLiveness,
  UserIdentity,
  AuthSession,
  OidcLogin,
  NotificationChannel,
  NotificationDelivery,
  AlertRule,
  AlertRuleChannel,
  MaintenanceWindow,
  AlertEvent,
  AlertPending,
  AlertRouterState,
  AlertStorm,
  RouterResourceSamples,
  RouterResourceHourly,
  RouterTrafficSamples,
  RouterTrafficHourly,
  RouterInterfacesState,
  RouterHealthStaged,
  Change,
  ChangeRouter,
  OrganizationHealthThresholds,
  RouterHealthThresholds,
  RouterHealthState,
];

export {
  ApiKey,
  AuthSession,
  OidcLogin,
  UserIdentity,
  AuditLogEntry,
  BillingAccount,
  BillingInvoice,
  BillingMirrorSync,
  BillingPaymentMethod,
  BillingSubscription,
  StripeWebhookEvent,
  Forward,
  HeartbeatCoverage,
  HeartbeatDaemon,
  ClusterLease,
  SshHostKey,
  OemProduct,
  Organization,
  OrganizationExternalId,
  OrganizationMember,
  Router,
  RouterAccess,
  RouterAdoption,
  RouterBackupState,
  RouterConfigBackup,
  RouterDowntimeHour,
  RouterFault,
  RouterLiveness,
  RouterHealthStaged,
  RouterInterfacesState,
  RouterResourceHourly,
  RouterResourceSamples,
  RouterTrafficHourly,
  RouterTrafficSamples,
  RouterWireguardPeer,
  Team,
  User,
  Webhook,
  WebhookDelivery,
  TunnelAddress,
  RateLimitCounter,
  NotificationChannel,
  NotificationDelivery,
  AlertRule,
  AlertRuleChannel,
  MaintenanceWindow,
  AlertEvent,
  AlertPending,
  AlertRouterState,
  AlertStorm,
  Change,
  ChangeRouter,
  OrganizationHealthThresholds,
  RouterHealthThresholds,
  RouterHealthState,
};
