import { defineEntity, type InferEntity, p } from "@mikro-orm/core";
import { Router } from "./router.entity.ts";

/**
 * SSH host keys pinned on first contact (trust on first use), one per router: a pin follows the
 * router, never an address, so a device answering at another router's address cannot borrow its pin.
 */
export const SshHostKey = defineEntity({
  name: "SshHostKey",
  tableName: "ssh_host_keys",
  properties: {
    id: p.uuid().primary(),
    router: () => p.oneToOne(Router).owner().deleteRule("cascade").unique("ssh_host_keys_router_id_unique"),
    /** `SHA256:<base64>`, as OpenSSH prints it. */
    fingerprint: p.string().length(100),
    createdAt: p.datetime(),
  },
});
export type TSshHostKey = InferEntity<typeof SshHostKey>;
