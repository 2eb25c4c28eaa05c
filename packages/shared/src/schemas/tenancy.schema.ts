import { z } from "zod";
import { ROLES } from "../rules/roles.ts";
import { stringError, text, textRule } from "../rules/text-rules.ts";

/** docs/api.md "Organizations, members and invitations": limits tests probe at the edges. */
export const TENANCY_LIMITS = {
  /** Levels of a tree; the top organization is level 1. */
  levels: 10,
  /** Child organizations under any one organization. */
  children: 100,
  organizationName: 100,
  /** Teams of one organization, the default one included. */
  teamsPerOrganization: 100,
  teamName: 100,
  /** Pending invitations of one organization (the next: 429). */
  pendingInvitations: 100,
  invitationDays: 7,
  email: 250,
} as const;

const roleError = `must be one of ${ROLES.join(", ")}`;
const ZRole = z.enum(ROLES, { error: roleError });
/** An id as sent in a path or body: any text under the text rule; one that is not ours matches nothing (404). */
const anyId = textRule(z.string({ error: stringError }).max(100, { error: "is not a valid id" }));
const email = textRule(
  z.string({ error: stringError }).max(TENANCY_LIMITS.email, { error: "must be at most 250 characters" }),
)
  .meta({ format: "email" })
  .pipe(z.email({ error: "must be a valid email address" }));

// ---- organizations ----------------------------------------------------------------------------

export const ZOrganization = z
  .object({
    id: z.string(),
    name: z.string(),
    parent_id: z.string().nullable(),
    level: z.number().int().meta({ description: "1 for the top of the tree." }),
    billing_root_id: z.string().meta({ description: "The organization that pays: the top of the tree." }),
    role: ZRole.nullable().meta({ description: "The caller's effective role there." }),
    routers: z.number().int(),
    online: z.number().int().optional().meta({ description: "Routers with a pulse now (in lists)." }),
    created_at: z.string(),
  })
  .meta({ id: "Organization" });
export type TOrganization = z.infer<typeof ZOrganization>;

export const ZOrganizationList = z.object({ data: z.array(ZOrganization) }).meta({ id: "OrganizationList" });
export type TOrganizationList = z.infer<typeof ZOrganizationList>;

export const ZCreateOrganizationInput = z.object({
  name: text({ min: 1, max: TENANCY_LIMITS.organizationName, error: stringError }),
  parent_id: anyId.optional(),
});
export type TCreateOrganizationInput = z.infer<typeof ZCreateOrganizationInput>;

export const ZOrganizationIdInput = z.object({ id: anyId });

export const ZUpdateOrganizationInput = z.object({
  id: anyId,
  name: text({ min: 1, max: TENANCY_LIMITS.organizationName, error: stringError }),
});
export type TUpdateOrganizationInput = z.infer<typeof ZUpdateOrganizationInput>;

// ---- members ----------------------------------------------------------------------------------

export const ZMember = z
  .object({
    user_id: z.string(),
    email: z.string(),
    role: ZRole,
    team_id: z.string().nullable(),
    organization_id: z.string().meta({ description: "Where the membership is: this organization or one above." }),
    created_at: z.string(),
  })
  .meta({ id: "Member" });
export type TMember = z.infer<typeof ZMember>;

export const ZMemberList = z.object({ data: z.array(ZMember) }).meta({ id: "MemberList" });
export type TMemberList = z.infer<typeof ZMemberList>;

export const ZMemberPathInput = z.object({ id: anyId, user_id: anyId });

export const ZUpdateMemberInput = z.object({
  id: anyId,
  user_id: anyId,
  role: ZRole.optional(),
  team_id: anyId.nullable().optional().meta({ description: "null: no longer bound to a team." }),
});
export type TUpdateMemberInput = z.infer<typeof ZUpdateMemberInput>;

// ---- invitations ------------------------------------------------------------------------------

export const ZCreateInvitationInput = z.object({
  id: anyId,
  email,
  role: ZRole,
  team_id: anyId.optional(),
});
export type TCreateInvitationInput = z.infer<typeof ZCreateInvitationInput>;

export const ZInvitation = z
  .object({
    id: z.string(),
    email: z.string(),
    role: ZRole,
    team_id: z.string().nullable(),
    expires_at: z.string(),
    created_at: z.string(),
  })
  .meta({ id: "Invitation" });
export type TInvitation = z.infer<typeof ZInvitation>;

export const ZCreatedInvitation = ZInvitation.extend({
  url: z.string().meta({ description: "The invitation link: shown only in this answer." }),
}).meta({ id: "CreatedInvitation" });
export type TCreatedInvitation = z.infer<typeof ZCreatedInvitation>;

export const ZInvitationList = z.object({ data: z.array(ZInvitation) }).meta({ id: "InvitationList" });
export type TInvitationList = z.infer<typeof ZInvitationList>;

export const ZInvitationPathInput = z.object({ id: anyId, invitation_id: anyId });

export const ZAcceptInvitationInput = z.object({ token: textRule(z.string({ error: stringError }).max(200)) });

export const ZAcceptedInvitation = z
  .object({ organization_id: z.string(), role: ZRole })
  .meta({ id: "AcceptedInvitation" });
export type TAcceptedInvitation = z.infer<typeof ZAcceptedInvitation>;

// ---- teams ------------------------------------------------------------------------------------

export const ZTeam = z
  .object({
    id: z.string(),
    name: z.string(),
    is_default: z.boolean(),
    routers: z.number().int(),
    created_at: z.string(),
  })
  .meta({ id: "Team" });
export type TTeam = z.infer<typeof ZTeam>;

export const ZTeamList = z.object({ data: z.array(ZTeam) }).meta({ id: "TeamList" });
export type TTeamList = z.infer<typeof ZTeamList>;

export const ZCreateTeamInput = z.object({
  id: anyId,
  name: text({ min: 1, max: TENANCY_LIMITS.teamName, error: stringError }),
});
export type TCreateTeamInput = z.infer<typeof ZCreateTeamInput>;

export const ZTeamPathInput = z.object({ id: anyId, team_id: anyId });

export const ZUpdateTeamInput = z.object({
  id: anyId,
  team_id: anyId,
  name: text({ min: 1, max: TENANCY_LIMITS.teamName, error: stringError }),
});
export type TUpdateTeamInput = z.infer<typeof ZUpdateTeamInput>;
