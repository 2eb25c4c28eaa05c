import { router } from "../../trpc/init.ts";
import { devLogin } from "./dev-login.ts";
import { loginHook } from "./login-hook.ts";

export const authRouter = router({ devLogin, loginHook });
