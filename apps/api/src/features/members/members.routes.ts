import { router } from "../../trpc/init.ts";
import { listMembers } from "./list-members.ts";
import { removeMember } from "./remove-member.ts";
import { updateMember } from "./update-member.ts";

export const membersRouter = router({ list: listMembers, update: updateMember, remove: removeMember });
