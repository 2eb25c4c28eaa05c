import ssh2 from "ssh2";
import { describe, expect, it } from "vitest";
import { generateEd25519KeyPair } from "./ssh-keys.ts";

describe("generateEd25519KeyPair", () => {
  it("only returns keys ssh2 can parse (its own generator fails about 1 in 300)", () => {
    for (let i = 0; i < 900; i++) {
      const pair = generateEd25519KeyPair();
      expect(ssh2.utils.parseKey(pair.private)).not.toBeInstanceOf(Error);
      expect(ssh2.utils.parseKey(pair.public)).not.toBeInstanceOf(Error);
    }
  });
});
