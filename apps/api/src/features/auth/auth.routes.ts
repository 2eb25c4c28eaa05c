import { router } from "../../trpc/init.ts";
import { devLogin } from "./dev-login.ts";
import { issueToken } from "./issue-token.ts";
import { loginHook } from "./login-hook.ts";
import { logout } from "./logout.ts";

export const authRouter = router({ devLogin, loginHook, token: issueToken, logout });
