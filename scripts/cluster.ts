// Local cluster control: `node dist/scripts/cluster.js up [--data-dir D] [--wait] [--base-port P]`,
// `down`, `status [--json]`; `up --tls` runs it with TLS (docs/security.md). See docs/operations.md.
import { Command, InvalidArgumentError } from "commander";
import { defaultDataDir, down, status, up } from "./cluster/commands.js";

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 65535)
    throw new InvalidArgumentError("expected a port number 1-65535");
  return n;
}

const program = new Command("cluster")
  .description(
    "run a local tern cluster: 3 controllers, 3 brokers, 3 coordinators as separate processes",
  )
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

let exitCode = 0;
program
  .command("up")
  .description("start every process (fails when a cluster is already running there)")
  .option("--wait", "wait (at most 60 s) until every process answers SERVING, then print the table")
  .option(
    "--wait-timeout-ms <ms>",
    "bound on --wait",
    (v: string) => {
      if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 600_000)
        throw new InvalidArgumentError("expected 1-600000");
      return Number(v);
    },
    60_000,
  )
  .option(
    "--base-port <port>",
    "controllers P..P+2, brokers P+100.., coordinators P+200.., metrics +1000",
    port,
  )
  .option("--data-dir <dir>", "cluster data directory", defaultDataDir())
  .option(
    "--reuse",
    "when every process of a cluster already runs there, use it (exit 0) instead of failing",
  )
  .option(
    "--tls",
    "TLS on every listener, mutual TLS between the processes: a CA and certificates are generated into <data-dir>/tls (docs/security.md)",
  )
  .action(
    async (opts: {
      wait?: boolean;
      waitTimeoutMs: number;
      basePort?: number;
      dataDir: string;
      reuse?: boolean;
      tls?: boolean;
    }) => {
      const options: {
        dataDir: string;
        wait: boolean;
        waitTimeoutMs: number;
        basePort?: number;
        reuse: boolean;
        tls: boolean;
      } = {
        dataDir: opts.dataDir,
        wait: opts.wait === true,
        waitTimeoutMs: opts.waitTimeoutMs,
        reuse: opts.reuse === true,
        tls: opts.tls === true,
      };
      if (opts.basePort !== undefined) options.basePort = opts.basePort;
      exitCode = await up(options);
    },
  );
program
  .command("status")
  .description("each process with its health; exits 0 only when all are up and SERVING")
  .option("--json", "print one JSON object")
  .option("--data-dir <dir>", "cluster data directory", defaultDataDir())
  .action(async (opts: { json?: boolean; dataDir: string }) => {
    exitCode = await status({ dataDir: opts.dataDir, json: opts.json === true });
  });
program
  .command("down")
  .description("SIGTERM every process, SIGKILL after 10 s, verify none is left")
  .option("--data-dir <dir>", "cluster data directory", defaultDataDir())
  .action(async (opts: { dataDir: string }) => {
    exitCode = await down({ dataDir: opts.dataDir });
  });

try {
  await program.parseAsync(process.argv);
} catch (e) {
  process.stderr.write(`cluster: ${(e as Error).message}\n`);
  exitCode = 1;
}
process.exit(exitCode);
