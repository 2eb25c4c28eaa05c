import { createPublicKey, verify } from "node:crypto";
import { generateEd25519KeyPair } from "@fleet/shared";
import ssh2 from "ssh2";
import { describe, expect, it } from "vitest";

describe("generateEd25519KeyPair (OpenSSH format written from node:crypto)", () => {
  it("ssh2 parses both halves, every time", () => {
    for (let i = 0; i < 300; i++) {
      const pair = generateEd25519KeyPair();
      expect(ssh2.utils.parseKey(pair.private)).not.toBeInstanceOf(Error);
      expect(ssh2.utils.parseKey(pair.public)).not.toBeInstanceOf(Error);
    }
  });

  it("the private half signs what the public half verifies, as ssh2 reads them", () => {
    const pair = generateEd25519KeyPair("agent@fleet");
    const priv = ssh2.utils.parseKey(pair.private);
    const pub = ssh2.utils.parseKey(pair.public);
    if (priv instanceof Error || pub instanceof Error) throw new Error("unparsable key");
    const data = Buffer.from("fleet");
    const signature = priv.sign(data);
    expect(signature).toBeInstanceOf(Buffer);
    expect(pub.verify(data, signature as Buffer)).toBe(true);
    expect(priv.getPublicSSH().equals(pub.getPublicSSH())).toBe(true);
    expect(pair.public.endsWith(" agent@fleet")).toBe(true);
    // And node:crypto agrees with ssh2 about the same public key.
    const raw = (pub.getPublicSSH() as Buffer).subarray(-32);
    const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]);
    expect(verify(null, data, createPublicKey({ key: spki, format: "der", type: "spki" }), signature as Buffer)).toBe(
      true,
    );
  });
});
