import { router } from "../../trpc/init.ts";
import { createTeam } from "./create-team.ts";
import { deleteTeam } from "./delete-team.ts";
import { listTeams } from "./list-teams.ts";
import { updateTeam } from "./update-team.ts";

export const teamsRouter = router({ list: listTeams, create: createTeam, update: updateTeam, delete: deleteTeam });
