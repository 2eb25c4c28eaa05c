import type { MigrationObject } from "@mikro-orm/core";
import { AccountsMigration } from "./20261121-001-accounts.migration.ts";
import { BillingMigration } from "./20261121-002-billing.migration.ts";
import { RoutersMigration } from "./20261121-003-routers.migration.ts";
import { ForwardsMigration } from "./20261121-004-forwards.migration.ts";
import { RouterHealthMigration } from "./20261121-005-router-health.migration.ts";
import { OemMigration } from "./20261121-006-oem.migration.ts";
import { OrganizationExternalIdsMigration } from "./20261121-007-organization-external-ids.migration.ts";
import { TunnelAddressesMigration } from "./20261123-008-tunnel-addresses.migration.ts";
import { RouterAdoptionsMigration } from "./20261123-009-router-adoptions.migration.ts";
import { BillingMirrorMigration } from "./20261123-010-billing-mirror.migration.ts";
import { DropJobsMigration } from "./20261123-012-drop-jobs.migration.ts";
import { EventsMigration } from "./20261123-011-events.migration.ts";
import { ForwardStateMigration } from "./20261125-015-forward-state.migration.ts";
import { TrustMigration } from "./20261125-013-trust.migration.ts";
import { AvailabilityMigration } from "./20261125-020-availability.migration.ts";
import { RouterLivenessMigration } from "./20261125-032-router-liveness.migration.ts";
import { LivenessPreviousMigration } from "./20261125-033-liveness-previous.migration.ts";
import { ConfigBackupsMigration } from "./20261125-019-config-backups.migration.ts";
import { RouterAccessMigration } from "./20261125-018-router-access.migration.ts";
import { ObservabilityMigration } from "./20261125-017-observability.migration.ts";
import { WireguardMigration } from "./20261125-016-wireguard.migration.ts";
import { WireguardEndpointsMigration } from "./20261125-031-wireguard-endpoints.migration.ts";
import { LivenessTokenMigration } from "./20261128-034-liveness-token.migration.ts";
import { RouterListMigration } from "./20261129-070-router-list.migration.ts";
import { LivenessRoomMigration } from "./20261128-035-liveness-room.migration.ts";
import { RouterTagsMigration } from "./20261129-100-router-tags.migration.ts";
import { BackupServedHashMigration } from "./20261129-040-backup-served-hash.migration.ts";
import { AdoptionSpentMigration } from "./20261129-055-adoption-spent.migration.ts";
import { TunnelAnsweredMigration } from "./20261129-056-tunnel-answered.migration.ts";
import { HeartbeatDaemonsMigration } from "./20261129-060-heartbeat-daemons.migration.ts";
import { TenancyMigration } from "./20261129-090-tenancy.migration.ts";
import { SignInMigration } from "./20261129-080-sign-in.migration.ts";
import { TeamScopeMigration } from "./20261129-050-team-scope.migration.ts";
import { AlertsMigration } from "./20261129-101-alerts.migration.ts";
import { AlertEventsRoutersMigration } from "./20261129-102-alert-events-routers.migration.ts";

/**
 * Every migration in order, listed explicitly. Hand-written SQL that runs unchanged on PostgreSQL
 * and PGlite; `schema-drift.test.ts` proves the result matches the entities.
 */
export const MIGRATIONS: MigrationObject[] = [
  { name: "20261121-001-accounts", class: AccountsMigration },
  { name: "20261121-002-billing", class: BillingMigration },
  { name: "20261121-003-routers", class: RoutersMigration },
  { name: "20261121-004-forwards", class: ForwardsMigration },
  { name: "20261121-005-router-health", class: RouterHealthMigration },
  { name: "20261121-006-oem", class: OemMigration },
  { name: "20261121-007-organization-external-ids", class: OrganizationExternalIdsMigration },
  { name: "20261123-008-tunnel-addresses", class: TunnelAddressesMigration },
  { name: "20261123-009-router-adoptions", class: RouterAdoptionsMigration },
  { name: "20261123-010-billing-mirror", class: BillingMirrorMigration },
  { name: "20261123-012-drop-jobs", class: DropJobsMigration },
  { name: "20261123-011-events", class: EventsMigration },
  { name: "20261125-013-trust", class: TrustMigration },
  { name: "20261125-015-forward-state", class: ForwardStateMigration },
  { name: "20261125-016-wireguard", class: WireguardMigration },
  { name: "20261125-017-observability", class: ObservabilityMigration },
  { name: "20261125-018-router-access", class: RouterAccessMigration },
  { name: "20261125-019-config-backups", class: ConfigBackupsMigration },
  { name: "20261125-020-availability", class: AvailabilityMigration },
  { name: "20261125-031-wireguard-endpoints", class: WireguardEndpointsMigration },
  { name: "20261125-032-router-liveness", class: RouterLivenessMigration },
  { name: "20261125-033-liveness-previous", class: LivenessPreviousMigration },
  { name: "20261128-034-liveness-token", class: LivenessTokenMigration },
  { name: "20261128-035-liveness-room", class: LivenessRoomMigration },
  { name: "20261129-100-router-tags", class: RouterTagsMigration },
  { name: "20261129-070-router-list", class: RouterListMigration },
  { name: "20261129-040-backup-served-hash", class: BackupServedHashMigration },
  { name: "20261129-055-adoption-spent", class: AdoptionSpentMigration },
  { name: "20261129-056-tunnel-answered", class: TunnelAnsweredMigration },
  { name: "20261129-060-heartbeat-daemons", class: HeartbeatDaemonsMigration },
  { name: "20261129-090-tenancy", class: TenancyMigration },
  { name: "20261129-080-sign-in", class: SignInMigration },
  { name: "20261129-050-team-scope", class: TeamScopeMigration },
  { name: "20261129-101-alerts", class: AlertsMigration },
  { name: "20261129-102-alert-events-routers", class: AlertEventsRoutersMigration },
];
