// The file operations of a clean (docs/storage.md, "Compaction", the swap), behind one interface
// so tests fail each step in turn and reopen the log: writing and syncing the temporary files
// (thread pool), then the synchronous steps of the swap (unlink, rename, directory sync).
import { renameSync, rmSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { syncDirectory } from "./checkpoint.js";

/** A file being written: appends in order, then a data sync and a close. */
export interface CleanerFile {
  append(parts: readonly Uint8Array[]): Promise<void>;
  datasync(): Promise<void>;
  close(): Promise<void>;
}

export interface CleanerFiles {
  /** Creates (or truncates) path for writing. */
  create(path: string): Promise<CleanerFile>;
  /** Removes path if it is there (an abandoned temporary file). */
  discard(path: string): Promise<void>;
  unlink(path: string): void;
  rename(from: string, to: string): void;
  syncDirectory(dir: string): void;
}

/** writev takes at most IOV_MAX buffers at a time. */
const WRITEV_PARTS_MAX = 1000;

export const CLEANER_FILES: CleanerFiles = {
  async create(path) {
    const handle = await open(path, "w", 0o600);
    return {
      async append(parts) {
        for (let i = 0; i < parts.length; i += WRITEV_PARTS_MAX)
          await handle.writev(parts.slice(i, i + WRITEV_PARTS_MAX));
      },
      datasync: () => handle.datasync(),
      close: () => handle.close(),
    };
  },
  discard: (path) => rm(path, { force: true }),
  unlink: (path) => rmSync(path, { force: true }),
  rename: (from, to) => renameSync(from, to),
  syncDirectory,
};
