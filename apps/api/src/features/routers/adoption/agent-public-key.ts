import { createPublicKey } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import type { AdoptionConfig } from "../../../config.ts";

/**
 * The tunnel agent's public key, which adoption scripts install on routers (docs/routeros.md
 * "Adoption"). The API never needs the private key: `TUNNEL_SSH_PUBLIC_KEY` names the public key
 * directly. Without it, the public half is read from `TUNNEL_SSH_KEY` (its `.pub` file, else the
 * key file itself), or from the dev key the agent generates in DATA_DIR (`tunnel-agent/id_ed25519.pub`).
 * Returns a function: the dev key may appear after the API started, so a miss is retried next time.
 */
export const agentPublicKeySource = (adoption: AdoptionConfig, dataDir: string): (() => string | undefined) => {
  if (adoption.sshPublicKey) {
    const key = adoption.sshPublicKey;
    return () => key;
  }
  let found: string | undefined;
  return () => {
    if (found) return found;
    if (adoption.sshKeyFile) found = fromKeyFile(adoption.sshKeyFile);
    else if (dataDir !== "memory") found = readPublicLine(path.resolve(dataDir, "tunnel-agent", "id_ed25519.pub"));
    return found;
  };
};

const PUBLIC_LINE = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521)) ([A-Za-z0-9+/]+={0,2})(?:\s|$)/;

const readPublicLine = (file: string): string | undefined => {
  try {
    const match = PUBLIC_LINE.exec(readFileSync(file, "utf8").trim());
    return match ? `${match[1]} ${match[2]}` : undefined;
  } catch {
    return undefined;
  }
};

const fromKeyFile = (file: string): string | undefined => {
  const beside = readPublicLine(`${file}.pub`);
  if (beside) return beside;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  return publicOfOpenSsh(text) ?? publicOfPem(text);
};

const sshString = (buffer: Buffer, offset: number): { value: Buffer; next: number } => {
  const length = buffer.readUInt32BE(offset);
  return { value: buffer.subarray(offset + 4, offset + 4 + length), next: offset + 4 + length };
};

/**
 * OpenSSH's own format ("openssh-key-v1") keeps the public key unencrypted after the cipher and
 * KDF fields, so it is read without any passphrase.
 */
const publicOfOpenSsh = (text: string): string | undefined => {
  const body = /-{5}BEGIN OPENSSH PRIVATE KEY-{5}([\s\S]+?)-{5}END OPENSSH PRIVATE KEY-{5}/.exec(text)?.[1];
  if (!body) return undefined;
  try {
    const data = Buffer.from(body.replace(/\s+/g, ""), "base64");
    const magic = Buffer.from("openssh-key-v1\0");
    if (!data.subarray(0, magic.length).equals(magic)) return undefined;
    let offset = magic.length;
    for (let i = 0; i < 3; i++) offset = sshString(data, offset).next; // cipher, kdf, kdf options
    offset += 4; // number of keys
    const blob = sshString(data, offset).value;
    const type = sshString(blob, 0).value.toString("latin1");
    return `${type} ${blob.toString("base64")}`;
  } catch {
    return undefined;
  }
};

const wireString = (value: Buffer): Buffer => {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(value.length);
  return Buffer.concat([length, value]);
};
const mpint = (value: Buffer): Buffer =>
  wireString((value[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), value]) : value);

/** PEM private keys (PKCS#8, PKCS#1): ed25519 and RSA, the types RouterOS 7 takes. */
const publicOfPem = (text: string): string | undefined => {
  try {
    const jwk = createPublicKey(text).export({ format: "jwk" });
    if (jwk.kty === "OKP" && jwk.crv === "Ed25519" && jwk.x) {
      const blob = Buffer.concat([wireString(Buffer.from("ssh-ed25519")), wireString(Buffer.from(jwk.x, "base64url"))]);
      return `ssh-ed25519 ${blob.toString("base64")}`;
    }
    if (jwk.kty === "RSA" && jwk.n && jwk.e) {
      const blob = Buffer.concat([
        wireString(Buffer.from("ssh-rsa")),
        mpint(Buffer.from(jwk.e, "base64url")),
        mpint(Buffer.from(jwk.n, "base64url")),
      ]);
      return `ssh-rsa ${blob.toString("base64")}`;
    }
    return undefined;
  } catch {
    return undefined;
  }
};
