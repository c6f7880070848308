// Makes sure the data directory exists and is writable before anything opens it, so a bad
// path is a one-line startup error rather than a stack trace from deep inside level.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describeOsError, StartupError } from "./startup-error.js";

export function prepareDataDir(dataDir: string): string {
  const absolute = resolve(dataDir);
  try {
    mkdirSync(absolute, { recursive: true });
  } catch (e) {
    throw new StartupError(`data directory ${absolute} cannot be created: ${describeOsError(e)}`, { cause: e });
  }
  const probe = join(absolute, `.write-probe-${process.pid}`);
  try {
    writeFileSync(probe, "ok");
    rmSync(probe, { force: true });
  } catch (e) {
    throw new StartupError(`data directory ${absolute} is not writable: ${describeOsError(e)}`, { cause: e });
  }
  return absolute;
}
