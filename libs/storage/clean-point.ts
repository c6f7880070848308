// A replica's clean point on disk (docs/storage.md, "Compaction"): the first dirty offset, below
// which the log is clean, kept in one small file in the replica's directory (Kafka keeps a
// cleaner-offset-checkpoint per log directory) so a restarted broker does not clean its logs
// all over again. Written as the segment checkpoints are: a temporary file, fsync, rename,
// directory fsync; a crash leaves the old file or the new one (SegmentedLog.open deletes a
// leftover `.tmp`). A file that does not check (length, version, CRC) reads as "nothing
// cleaned": cleaning again is only work, a point too high would leave records uncleaned.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { writeFileDurably } from "./checkpoint.js";

export const CLEAN_POINT_FILE = "cleaner-offset-checkpoint";
const VERSION = 1;
/** u8 version, i64 first dirty offset, u32 CRC-32 of the 9 bytes before it. */
const FILE_BYTES = 13;

export function encodeCleanPoint(firstDirtyOffset: bigint): Buffer {
  const buf = Buffer.alloc(FILE_BYTES);
  buf.writeUInt8(VERSION, 0);
  buf.writeBigInt64BE(firstDirtyOffset, 1);
  buf.writeUInt32BE(crc32(buf.subarray(0, 9)), 9);
  return buf;
}

/** The offset a file holds; undefined when it does not check. */
export function decodeCleanPoint(buf: Buffer): bigint | undefined {
  if (buf.byteLength !== FILE_BYTES || buf.readUInt8(0) !== VERSION) return undefined;
  if (buf.readUInt32BE(9) !== crc32(buf.subarray(0, 9))) return undefined;
  const offset = buf.readBigInt64BE(1);
  return offset >= 0n ? offset : undefined;
}

/** The first dirty offset stored in dir: 0 when none is, or when the file does not check. */
export function readCleanPoint(dir: string): bigint {
  const path = join(dir, CLEAN_POINT_FILE);
  if (!existsSync(path)) return 0n;
  return decodeCleanPoint(readFileSync(path)) ?? 0n;
}

/** Stores the first dirty offset in dir, atomically and durably (synchronous: 13 bytes). */
export function writeCleanPoint(dir: string, firstDirtyOffset: bigint): void {
  writeFileDurably(join(dir, CLEAN_POINT_FILE), encodeCleanPoint(firstDirtyOffset));
}
