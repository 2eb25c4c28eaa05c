import { createHash } from "node:crypto";

/**
 * RouterOS dates every export in its first line (`# 2026-11-25 10:50:00 by RouterOS 7.16.2`, or
 * `# nov/25/2026 10:50:00 by RouterOS 6.49` on older releases): a line that changes on every read
 * and says nothing about the configuration.
 */
const DATED_HEADER = /^# .*\bby RouterOS\b.*$/;

/** The export as compared and diffed (docs/api.md "Configuration backups"): CRLF as LF, the dated first line dropped. */
export const normalizeConfigExport = (content: string): string => {
  const text = content.replace(/\r\n/g, "\n");
  const newline = text.indexOf("\n");
  const first = newline === -1 ? text : text.slice(0, newline);
  return DATED_HEADER.test(first) ? text.slice(newline === -1 ? text.length : newline + 1) : text;
};

export interface ConfigExportDigest {
  /** Hex SHA-256 of the export as read, UTF-8: the text `GET .../backups/{id}` serves. */
  sha256: string;
  /**
   * Hex SHA-256 of the normalized export (`normalizeConfigExport`): equal configurations have equal
   * digests whatever their dated first line; a read is compared with the newest version by it.
   */
  normalizedSha256: string;
  /** UTF-8 bytes of the export as read. */
  bytes: number;
  /** Lines of the export as read. */
  lines: number;
}

export const digestConfigExport = (content: string): ConfigExportDigest => {
  const normalized = normalizeConfigExport(content);
  const text = content.replace(/\r\n/g, "\n");
  return {
    sha256: createHash("sha256").update(content, "utf8").digest("hex"),
    normalizedSha256: createHash("sha256").update(normalized, "utf8").digest("hex"),
    bytes: Buffer.byteLength(content, "utf8"),
    lines: text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
  };
};
