import { defineEntity, type InferEntity, p } from "@mikro-orm/core";

/** SSH host keys pinned on first contact (trust on first use), per router endpoint. */
export const SshHostKey = defineEntity({
  name: "SshHostKey",
  tableName: "ssh_host_keys",
  uniques: [{ name: "ssh_host_keys_host_port_unique", properties: ["host", "port"] }],
  properties: {
    id: p.uuid().primary(),
    host: p.string().length(45),
    port: p.integer(),
    /** `SHA256:<base64>`, as OpenSSH prints it. */
    fingerprint: p.string().length(100),
    createdAt: p.datetime(),
  },
});
export type TSshHostKey = InferEntity<typeof SshHostKey>;
