import { router } from "../../trpc/init.ts";
import { createApiKey } from "./create-api-key.ts";
import { deleteApiKey } from "./delete-api-key.ts";
import { listApiKeys } from "./list-api-keys.ts";

export const apiKeysRouter = router({ create: createApiKey, list: listApiKeys, delete: deleteApiKey });
