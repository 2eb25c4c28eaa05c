import { router } from "../../trpc/init.ts";
import { createAccount } from "./create-account.ts";
import { getAccount } from "./get-account.ts";
import { updateAccount } from "./update-account.ts";

export const accountRouter = router({
  get: getAccount,
  create: createAccount,
  update: updateAccount,
});
