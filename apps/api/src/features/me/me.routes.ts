import { router } from "../../trpc/init.ts";
import { getMe } from "./get-me.ts";

export const meRouter = router({ get: getMe });
