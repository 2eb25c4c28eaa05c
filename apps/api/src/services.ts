import type { AccountService } from "./features/account/account.service.ts";
import type { AuthService } from "./features/auth/auth.service.ts";
import type { TokenVerifier } from "./features/auth/token-verifier.ts";
import type { TeamResolver } from "./features/teams/team-resolver.ts";

/** What procedures reach through the context: built once in start-api.ts. */
export interface Services {
  tokens: TokenVerifier;
  auth: AuthService;
  accounts: AccountService;
  teams: TeamResolver;
}
