import type { RouterOsClient, RouterOsConnector } from "../routeros/routeros-client.ts";
import { HostKeyMismatchError } from "../routeros/ssh-routeros-client.ts";
import { PermanentJobError } from "./job-errors.ts";

/**
 * One SSH session per job: connect to the router's tunnel address, run `work`, always close. A
 * changed host key is reported with the router's id so the job's last_error says which one.
 */
export const withRouterSession = async <T>(
  connector: RouterOsConnector,
  target: { routerId: string; host: string; port: number },
  work: (router: RouterOsClient) => Promise<T>,
): Promise<T> => {
  let client: RouterOsClient;
  try {
    client = await connector.connect(target);
  } catch (error) {
    if (error instanceof HostKeyMismatchError) {
      throw new PermanentJobError(
        `refusing router ${target.routerId}: its SSH ${error.message}. If the router was re-keyed on purpose, delete its row from ssh_host_keys (router_id = '${target.routerId}').`,
        { cause: error },
      );
    }
    throw error;
  }
  try {
    return await work(client);
  } finally {
    client.close();
  }
};
