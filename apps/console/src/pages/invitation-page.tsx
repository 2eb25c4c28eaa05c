import { useMutation, useQueryClient } from "@tanstack/react-query";
import { usePageTitle } from "../components/hooks.ts";
import { navigate } from "../navigation.tsx";
import { providerSession } from "../provider-session.ts";
import { session } from "../session.ts";
import { httpStatus, messageOf, useTRPC, useTRPCClient } from "../trpc.ts";

/** Why an invitation cannot be accepted, in the words of its status (docs/api.md "Members and invitations"). */
const refusal = (error: unknown): string => {
  switch (httpStatus(error)) {
    case 403:
      return "This invitation is for another email address. Sign out and sign in as the invited person.";
    case 410:
      return "This invitation has been used, revoked or has expired. Ask for a new one.";
    case 404:
      return "This invitation does not exist. Check the link.";
    default:
      return messageOf(error);
  }
};

/** `/console/invitations/<token>`: the signed-in person accepts the invitation. */
export const InvitationPage = ({ token }: { token: string }) => {
  usePageTitle("Invitation");
  const trpc = useTRPC();
  const client = useTRPCClient();
  const queryClient = useQueryClient();
  const accept = useMutation(
    trpc.invitations.accept.mutationOptions({
      // Signed in through the provider: straight into the organization just joined.
      onSuccess: async (joined) => {
        if (session.fromProvider() && (await providerSession.resume(client, joined.organization_id))) {
          queryClient.clear();
          navigate("/console/", true);
        }
      },
    }),
  );
  return (
    <section aria-labelledby="invitation-title">
      <h1 id="invitation-title">Invitation</h1>
      {accept.data ? (
        <div role="status" className="card notice">
          <p>
            You joined as <strong>{accept.data.role}</strong>. The organization is now your current one: sign in again
            to act in it.
          </p>
          <button type="button" onClick={() => session.signOut()}>
            Sign in again
          </button>
        </div>
      ) : (
        <>
          <p>You have been invited to join an organization.</p>
          {accept.error ? (
            <p role="alert" className="form-error">
              {refusal(accept.error)}
            </p>
          ) : null}
          <button type="button" disabled={accept.isPending} onClick={() => accept.mutate({ token })}>
            Accept the invitation
          </button>
        </>
      )}
    </section>
  );
};
