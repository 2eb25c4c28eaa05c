import { router } from "../../trpc/init.ts";
import { createAccess } from "./create-access.ts";
import { getAccess } from "./get-access.ts";
import { listAccess } from "./list-access.ts";
import { revokeAccess } from "./revoke-access.ts";

export const accessRouter = router({ create: createAccess, list: listAccess, get: getAccess, revoke: revokeAccess });
