import type { RouterOsClient, RouterOsConnector, RouterOsTarget } from "../routeros/routeros-client.ts";
import { AddressPinRefusedError, RouterRemovedError } from "../routeros/host-key-store.ts";
import { HostKeyMismatchError } from "../routeros/ssh-routeros-client.ts";
import { PermanentJobError } from "./job-errors.ts";

/**
 * One SSH session per job: connect to the router's tunnel address, run `work`, always close. A
 * changed host key is reported with the router's id so the job's last_error says which one.
 */
export const withRouterSession = async <T>(
  connector: RouterOsConnector,
  target: RouterOsTarget,
  work: (router: RouterOsClient) => Promise<T>,
): Promise<T> => {
  const client = await openRouterSession(connector, target);
  try {
    return await work(client);
  } finally {
    client.close();
  }
};

/** Logs in as {@link withRouterSession} does; the caller closes the session. */
export const openRouterSession = async (
  connector: RouterOsConnector,
  target: RouterOsTarget,
): Promise<RouterOsClient> => {
  try {
    return await connector.connect(target);
  } catch (error) {
    // Never retried into success: an operator must act (or the router is gone for good).
    if (error instanceof RouterRemovedError || error instanceof AddressPinRefusedError) {
      throw new PermanentJobError(error.message, { cause: error });
    }
    if (error instanceof HostKeyMismatchError) {
      throw new PermanentJobError(
        `refusing router ${target.routerId}: its SSH ${error.message}. If the router was re-keyed on purpose, delete its row from ssh_host_keys (router_id = '${target.routerId}').`,
        { cause: error },
      );
    }
    throw error;
  }
};
