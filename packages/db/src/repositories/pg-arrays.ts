/**
 * PostgreSQL array literals for `unnest($1::text[], ...)` parameters, built here because the
 * drivers' generic serializers cost about three times as much: 8,000 heartbeats took ~50 ms of
 * event loop in `pg`, ~15 ms here. Values still travel as bound parameters, never as SQL text.
 */

/** Text elements, double-quoted with `"` and `\` escaped; null and undefined become NULL. */
export const textArray = (values: readonly (string | null | undefined)[]): string => {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) out += ",";
    if (value === null || value === undefined) out += "NULL";
    // Most values hold neither character: no regular expression, no copy.
    else if (value.indexOf('"') < 0 && value.indexOf("\\") < 0) out += `"${value}"`;
    else out += `"${value.replace(/["\\]/g, "\\$&")}"`;
  }
  return `${out}}`;
};

/**
 * Elements whose text form needs no quoting: numbers, booleans, UUIDs. Only finite numbers and
 * strings of UUID characters are accepted, so nothing here can break the literal.
 */
export const plainArray = (values: readonly (number | boolean | string | null | undefined)[]): string => {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) out += ",";
    if (value === null || value === undefined) out += "NULL";
    else if (typeof value === "number") {
      if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
      out += String(value);
    } else if (typeof value === "boolean") out += value ? "t" : "f";
    else if (/^[0-9A-Fa-f-]+$/.test(value)) out += value;
    else throw new RangeError("plainArray takes numbers, booleans and UUIDs only");
  }
  return `${out}}`;
};

/** Element types of `binaryArray`, by their PostgreSQL type OID. */
const ELEMENT_OID = { uuid: 2950, float8: 701, float4: 700, int8: 20, timestamptz: 1184, text: 25 } as const;
/** PostgreSQL's epoch (2000-01-01) in Unix milliseconds: timestamptz is microseconds since it. */
const PG_EPOCH_MS = 946_684_800_000;
export type BinaryElement = keyof typeof ELEMENT_OID;

const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX["0123456789abcdef".charCodeAt(i)] = i;
  HEX["0123456789ABCDEF".charCodeAt(i)] = i;
}

const elementSize = (type: BinaryElement, value: string | number | Buffer): number => {
  if (type === "uuid") return 16;
  if (type === "float8" || type === "int8" || type === "timestamptz") return 8;
  if (type === "float4") return 4;
  return Buffer.byteLength(value as string, "utf8");
};

/** A canonical UUID's 16 bytes (8-4-4-4-12 hex digits); anything else is refused. */
const writeUuid = (out: Buffer, at: number, value: string): void => {
  if (value.length !== 36) throw new RangeError("binaryArray: not a UUID");
  let o = at;
  for (let i = 0; i < 36; ) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (value.charCodeAt(i) !== 45) throw new RangeError("binaryArray: not a UUID");
      i += 1;
      continue;
    }
    const hi = HEX[value.charCodeAt(i)] ?? -1;
    const lo = HEX[value.charCodeAt(i + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new RangeError("binaryArray: not a UUID");
    out[o++] = (hi << 4) | lo;
    i += 2;
  }
};

/** A whole number as int8 (big-endian), without a BigInt for the usual non-negative safe integers. */
const writeInt8 = (out: Buffer, at: number, value: number | string | Buffer): void => {
  if (Buffer.isBuffer(value)) {
    if (value.length !== 8) throw new RangeError("binaryArray: an int8 buffer has 8 bytes");
    value.copy(out, at);
  } else if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) {
    out.writeUInt32BE(Math.floor(value / 0x1_0000_0000), at);
    out.writeUInt32BE(value % 0x1_0000_0000, at + 4);
  } else {
    if (typeof value === "number" && !Number.isSafeInteger(value)) throw new RangeError(`not a safe integer: ${value}`);
    out.writeBigInt64BE(BigInt(value), at);
  }
};

/**
 * A one-dimensional array in PostgreSQL's binary format (what `array_recv` reads). `pg` (and
 * PGlite) send a Buffer parameter in binary, so `unnest($1::uuid[])` gets 16 bytes per element
 * instead of 36 characters to parse: the binding of the heartbeat flush's parameters was about
 * 2 µs a row of the database's CPU in text (docs/scale.md). The element type must be the one the
 * statement casts the parameter to. int8 takes whole numbers, their decimal text, or 8 big-endian
 * bytes; timestamptz takes Unix milliseconds; null and undefined become NULL.
 */
export const binaryArray = (
  type: BinaryElement,
  values: readonly (string | number | Buffer | null | undefined)[],
): Buffer => {
  if (values.length === 0) {
    const empty = Buffer.alloc(12);
    empty.writeInt32BE(ELEMENT_OID[type], 8);
    return empty;
  }
  let size = 20;
  let hasNull = 0;
  // Indexed loops: the iterator results of for...of were the flush's largest allocation (BENCH_HEAP_PROF).
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    size += 4;
    if (value === null || value === undefined) hasNull = 1;
    else size += elementSize(type, value);
  }
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(1, 0); // dimensions
  out.writeInt32BE(hasNull, 4);
  out.writeInt32BE(ELEMENT_OID[type], 8);
  out.writeInt32BE(values.length, 12);
  out.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) {
      out.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    if (type === "uuid") {
      out.writeInt32BE(16, at);
      writeUuid(out, at + 4, String(value));
      at += 20;
    } else if (type === "float8") {
      if (typeof value !== "number" || !Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
      out.writeInt32BE(8, at);
      out.writeDoubleBE(value, at + 4);
      at += 12;
    } else if (type === "float4") {
      if (typeof value !== "number" || !Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
      out.writeInt32BE(4, at);
      out.writeFloatBE(value, at + 4);
      at += 8;
    } else if (type === "int8") {
      out.writeInt32BE(8, at);
      writeInt8(out, at + 4, value);
      at += 12;
    } else if (type === "timestamptz") {
      if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new RangeError(`not a time in ms: ${value}`);
      out.writeInt32BE(8, at);
      writeInt8(out, at + 4, (value - PG_EPOCH_MS) * 1000);
      at += 12;
    } else {
      const written = out.write(String(value), at + 4, "utf8");
      out.writeInt32BE(written, at);
      at += 4 + written;
    }
  }
  return out;
};
