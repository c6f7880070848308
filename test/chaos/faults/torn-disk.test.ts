// tearBrokerDisk on a data directory laid out as a broker's: it appends a torn tail to the newest
// journal file and to each partition's newest segment only, and deletes or cuts that segment's
// index; older files are left alone (they were synced before the crash).
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { tearBrokerDisk, tornSummary } from "./torn-disk.js";

const root = mkdtempSync(join(tmpdir(), "tern-torn-disk-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it("tears only what a crash can: the newest files' tails and the unsynced indexes", () => {
  const journal = join(root, "entry-journal");
  mkdirSync(journal, { recursive: true });
  writeFileSync(join(journal, "00000000000000000001.journal"), Buffer.alloc(100, 1));
  writeFileSync(join(journal, "00000000000000000002.journal"), Buffer.alloc(50, 2));
  const part = join(root, "partitions", "t-0");
  mkdirSync(part, { recursive: true });
  writeFileSync(join(part, "00000000000000000001.log"), Buffer.alloc(300, 3));
  writeFileSync(join(part, "00000000000000000001.index"), Buffer.alloc(80, 4));
  writeFileSync(join(part, "00000000000000000009.log"), Buffer.alloc(200, 5));
  writeFileSync(join(part, "00000000000000000009.index"), Buffer.alloc(120, 6));

  const done = tearBrokerDisk(root, { kind: "bad-checksum", tailBytes: 10, seed: 7 });

  expect(statSync(join(journal, "00000000000000000001.journal")).size).toBe(100);
  expect(statSync(join(journal, "00000000000000000002.journal")).size).toBe(50 + 4 + 10);
  // A whole record whose length field says exactly what follows: its checksum cannot match.
  expect(readFileSync(join(journal, "00000000000000000002.journal")).readUInt32BE(50)).toBe(10);
  expect(statSync(join(part, "00000000000000000001.log")).size).toBe(300);
  expect(statSync(join(part, "00000000000000000001.index")).size).toBe(80);
  expect(statSync(join(part, "00000000000000000009.log")).size).toBe(200 + 4 + 10);
  const index = join(part, "00000000000000000009.index");
  expect(!existsSync(index) || statSync(index).size % 40 !== 0).toBe(true);
  expect(done).toHaveLength(3);
  expect(tornSummary(done)).toMatch(/^2 bad-checksum tail, 1 (deleted|cut mid-entry)$/);
});
