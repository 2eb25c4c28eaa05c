import { router } from "../../trpc/init.ts";
import { createOrganization } from "./create-organization.ts";
import { deleteOrganization } from "./delete-organization.ts";
import { listOrganizations } from "./list-organizations.ts";
import { updateOrganization } from "./update-organization.ts";

export const organizationsRouter = router({
  list: listOrganizations,
  create: createOrganization,
  update: updateOrganization,
  delete: deleteOrganization,
});
