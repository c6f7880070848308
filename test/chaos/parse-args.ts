// The chaos entry points' argument parsing: a bad flag becomes one line from the caller's error
// handler (exit 2), --help prints the usage on stdout (exit 0), as every tern entry point does.
import { CommanderError, type Command } from "commander";

/** Parses argv into program; false when help was printed (the caller exits 0). */
export function parseArgs(program: Command, argv: readonly string[]): boolean {
  program.exitOverride().configureOutput({ writeErr: () => undefined });
  try {
    program.parse(argv as string[]);
    return true;
  } catch (e) {
    if (
      e instanceof CommanderError &&
      (e.code === "commander.helpDisplayed" || e.code === "commander.help")
    )
      return false;
    throw e;
  }
}
