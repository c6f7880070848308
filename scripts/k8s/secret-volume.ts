// A Secret volume as the kubelet lays it out (its AtomicWriter): the files live in a hidden
// timestamped directory, `..data` is a symlink to it and each key is a symlink through
// `..data`. An update writes a new directory and renames a new `..data` link over the old one,
// so a reader sees the old set or the new set, never a mix. The local pod runs (manifest-start)
// use it to put certificates exactly where, and as, a mounted Secret would.
import {
  mkdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync,
  chmodSync,
} from "node:fs";
import path from "node:path";

const DATA_LINK = "..data";
let generation = 0;

/** Writes (or atomically replaces) the Secret's keys in dir; mode as the volume's defaultMode. */
export function writeSecretVolume(
  dir: string,
  files: Readonly<Record<string, string | Buffer>>,
  mode = 0o440,
): void {
  mkdirSync(dir, { recursive: true });
  const stamp = `..${new Date().toISOString().replace(/[-:.]/g, "_")}_${process.pid}_${generation++}`;
  const target = path.join(dir, stamp);
  mkdirSync(target);
  for (const [key, content] of Object.entries(files)) {
    if (key.includes("/") || key.startsWith("."))
      throw new Error(`secret key ${key}: not a plain file name`);
    writeFileSync(path.join(target, key), content);
    chmodSync(path.join(target, key), mode);
  }
  const link = path.join(dir, DATA_LINK);
  const previous = existsSync(link) ? readlinkSync(link) : undefined;
  const tmpLink = path.join(dir, `${DATA_LINK}_tmp`);
  rmSync(tmpLink, { force: true });
  symlinkSync(stamp, tmpLink);
  renameSync(tmpLink, link);
  for (const key of Object.keys(files)) {
    const keyLink = path.join(dir, key);
    if (!existsSync(keyLink)) symlinkSync(path.join(DATA_LINK, key), keyLink);
  }
  if (previous !== undefined && previous !== stamp)
    rmSync(path.join(dir, previous), { recursive: true, force: true });
}
