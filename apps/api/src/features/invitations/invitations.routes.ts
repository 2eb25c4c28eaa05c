import { router } from "../../trpc/init.ts";
import { acceptInvitation } from "./accept-invitation.ts";
import { createInvitation } from "./create-invitation.ts";
import { listInvitations } from "./list-invitations.ts";
import { revokeInvitation } from "./revoke-invitation.ts";

export const invitationsRouter = router({
  create: createInvitation,
  list: listInvitations,
  revoke: revokeInvitation,
  accept: acceptInvitation,
});
