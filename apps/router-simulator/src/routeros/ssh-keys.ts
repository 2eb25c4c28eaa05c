import ssh2 from "ssh2";

/**
 * An ed25519 key pair in OpenSSH format. ssh2's generator now and then (about 1 in 300) emits a
 * key whose public half lost a leading zero byte, which ssh2 itself then refuses to parse: draw
 * again until both halves parse.
 */
export const generateEd25519KeyPair = (): { private: string; public: string } => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519");
    if (!(ssh2.utils.parseKey(pair.private) instanceof Error) && !(ssh2.utils.parseKey(pair.public) instanceof Error)) {
      return pair;
    }
  }
  throw new Error("could not generate a usable ed25519 key");
};
