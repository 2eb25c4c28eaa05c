/**
 * One WireGuard interface as the hub drives it (docs/operations.md "The management tunnel"):
 * read its peers and their last handshakes, and apply a whole batch of peer changes at once.
 */
export interface WireguardPeerState {
  /** base64 public key. */
  publicKey: string;
  allowedIps: string[];
  /** null: no handshake yet. */
  lastHandshakeAt: Date | null;
  /** `ip:port` the peer was last seen from (behind NAT: its NAT's mapping). */
  endpoint: string | null;
}

export interface WireguardDeviceState {
  publicKey: string | null;
  listenPort: number;
  peers: WireguardPeerState[];
}

/**
 * A batch: peers to put (created or updated, allowed IPs replaced; `endpoint`, when given, primes
 * where the peer is: the hub can then start a handshake itself) and peers to remove.
 */
export interface WireguardPeerBatch {
  put: ReadonlyArray<{ publicKey: string; allowedIps: readonly string[]; endpoint?: string }>;
  remove: readonly string[];
  /** Drops every peer not in `put` first (the start-up sync). */
  replace?: boolean;
}

export interface WireguardDevice {
  readonly name: string;
  /** `kernel` (Linux WireGuard) or `userspace` (wireguard-go). */
  readonly implementation: "kernel" | "userspace";
  state(): Promise<WireguardDeviceState>;
  apply(batch: WireguardPeerBatch): Promise<void>;
  /** Deletes the interface (and stops wireguard-go). */
  close(): Promise<void>;
}
