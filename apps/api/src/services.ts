import type { Request } from "express";
import type { AlertRulesService } from "./features/alerts/alert-rules.service.ts";
import type { MaintenanceWindowsService } from "./features/alerts/maintenance-windows.service.ts";
import type { NotificationChannelsService } from "./features/alerts/notification-channels.service.ts";
import type { AccountService } from "./features/account/account.service.ts";
import type { ApiKeysService } from "./features/api-keys/api-keys.service.ts";
import type { AuditLogService } from "./features/audit-log/audit-log.service.ts";
import type { AuthService } from "./features/auth/auth.service.ts";
import type { AccessService } from "./features/access/access.service.ts";
import type { AvailabilityService } from "./features/availability/availability.service.ts";
import type { BackupsService } from "./features/backups/backups.service.ts";
import type { ForwardsService } from "./features/forwards/forwards.service.ts";
import type { OrganizationResolver } from "./features/auth/organization-resolver.ts";
import type { CredentialWatch } from "./features/auth/credential-watch.ts";
import type { StreamLimits } from "./features/auth/stream-limits.ts";
import type { TokenVerifier } from "./features/auth/token-verifier.ts";
import type { SignInService } from "./features/auth/sign-in.service.ts";
import type { OemService } from "./features/oem/oem.service.ts";
import type { InvoicesService } from "./features/invoices/invoices.service.ts";
import type { PaymentMethodsService } from "./features/payment-methods/payment-methods.service.ts";
import type { AdoptionService } from "./features/routers/adoption/adoption.service.ts";
import type { RouterService } from "./features/routers/routers.service.ts";
import type { RouterHealthService } from "./features/routers/router-health.service.ts";
import type { StripeWebhookService } from "./features/subscriptions/stripe-webhook.service.ts";
import type { TeamResolver } from "./features/teams/team-resolver.ts";
import type { RateLimiter } from "./trpc/rate-limit.ts";
import type { SharedRateLimiter } from "./trpc/shared-rate-limit.ts";
import type { WebhooksService } from "./features/webhooks/webhooks.service.ts";
import type { InvitationsService } from "./features/invitations/invitations.service.ts";
import type { MembershipsService } from "./features/members/memberships.service.ts";
import type { OrganizationsService } from "./features/organizations/organizations.service.ts";
import type { TeamsService } from "./features/teams/teams.service.ts";

/** What procedures reach through the context: built once in start-api.ts. */
export interface Services {
  tokens: TokenVerifier;
  organizations: OrganizationResolver;
  auth: AuthService;
  accounts: AccountService;
  teams: TeamResolver;
  forwards: ForwardsService;
  oem: OemService;
  paymentMethods: PaymentMethodsService;
  invoices: InvoicesService;
  routers: RouterService;
  adoption: AdoptionService;
  stripeWebhooks: StripeWebhookService;
  /**
   * docs/api.md "Rate limits": per credential (`api`) and per source address without a valid
   * credential (`unauthenticated`), both counted across API processes; dev-login per source address.
   */
  rateLimits: { api: SharedRateLimiter; unauthenticated: SharedRateLimiter; devLogin: RateLimiter };
  /** The client's address of a request: the socket's peer, or what a TRUST_PROXY proxy says it is. */
  clientAddress(req: Request): string | undefined;
  apiKeys: ApiKeysService;
  auditLog: AuditLogService;
  webhooks: WebhooksService;
  /** Open streams end with their credential (docs/api.md "Authentication"). */
  streams: CredentialWatch;
  /** Open streams per credential and organization (docs/api.md "Rate limits"). */
  streamLimits: StreamLimits;
  availability: AvailabilityService;
  /** Resource and traffic series of a router (docs/api.md "Health"). */
  routerHealth: RouterHealthService;
  backups: BackupsService;
  access: AccessService;
  /** Effective roles down the tree, and members (docs/api.md "Roles and scopes"). */
  memberships: MembershipsService;
  /** The organization tree below a token's organization (docs/api.md "Organizations"). */
  organizationTree: OrganizationsService;
  invitations: InvitationsService;
  /** Teams of an organization and moving routers between them (docs/api.md "Teams"). */
  teamAdmin: TeamsService;
  /** Sign-in through an OpenID Connect provider, sessions and the system's own tokens (docs/api.md "Sign-in"). */
  signIn: SignInService;
  notificationChannels: NotificationChannelsService;
  alertRules: AlertRulesService;
  maintenanceWindows: MaintenanceWindowsService;
}
