// The exactly-once demo on a running cluster (default: the local one, 127.0.0.1:9090):
// creates an input and an output topic, produces N records, runs two copier instances as one
// consumer group (subscribe: the group coordinator splits the input partitions; distinct
// transactional ids) until the input is drained, then verifies with
// a read_committed consumer that the output holds each transformed input exactly once and that
// the committed offsets equal the input end offsets. Exit 0 when verified, 1 otherwise.
//   node dist/scripts/demo/run-demo.js [--bootstrap HOST:PORT] [--records N] [--partitions P]
// TLS as the CLI finds it: TERN_TLS_CA_FILE [+ _CERT_FILE/_KEY_FILE], or the local cluster's
// own CA when `cluster up --tls` started it (docs/security.md).
import { parseArgs } from "node:util";
import { Admin, LOCAL_BOOTSTRAP, Producer } from "../../libs/client/index.js";
import { configureCliTls } from "../../cli/commands/cli-tls.js";
import { runCopier } from "./copier.js";
import { transform } from "./transform.js";
import { verifyExactlyOnce } from "./verify.js";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      bootstrap: { type: "string", default: process.env.TERN_BOOTSTRAP ?? LOCAL_BOOTSTRAP },
      records: { type: "string", default: "1000" },
      partitions: { type: "string", default: "3" },
    },
  });
  const bootstrap = values.bootstrap!;
  const tls = configureCliTls({}, bootstrap);
  const security = tls ? { tls } : {};
  const n = Number(values.records);
  const partitions = Number(values.partitions);
  if (!Number.isInteger(n) || n < 1 || !Number.isInteger(partitions) || partitions < 2) {
    process.stderr.write(
      "usage: run-demo [--bootstrap HOST:PORT] [--records N>=1] [--partitions P>=2]\n",
    );
    return 2;
  }
  const run = Date.now().toString(36);
  const input = `demo-in-${run}`;
  const output = `demo-out-${run}`;
  const groupId = `demo-copier-${run}`;
  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  const admin = new Admin({ bootstrap, ...security });
  try {
    say(`1. creating topics ${input} and ${output} (${partitions} partitions, replication 3)`);
    for (const r of await admin.createTopics([
      { name: input, partitions, replicationFactor: 3 },
      { name: output, partitions, replicationFactor: 3 },
    ]))
      if (r.error) throw r.error;
    await admin.waitForLeaders([input, output]);
  } finally {
    await admin.close();
  }
  say(`2. producing ${n} records ("record-i") to ${input}`);
  const producer = new Producer({ bootstrap, ...security });
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      producer.send({ topic: input, key: `k${i}`, value: `record-${i}` }),
    ),
  );
  await producer.close();
  say(
    `3. running two copiers in consumer group ${groupId} (subscribed to ${input}; transactional ids ${groupId}-a, ${groupId}-b), transform "${"record-0"}" -> "${transform("record-0")}"`,
  );
  const started = Date.now();
  const log =
    (id: string) =>
    (line: string): void => {
      if (/^(assigned|revoked|lost) /.test(line)) say(`   copier ${id}: ${line}`);
    };
  const results = await Promise.all(
    ["a", "b"].map((id) =>
      runCopier({
        bootstrap,
        ...security,
        input,
        output,
        groupId,
        transactionalId: `${groupId}-${id}`,
        subscribe: true,
        exitWhenIdleMs: 2_000,
        log: log(id),
      }),
    ),
  );
  const seconds = (Date.now() - started) / 1000;
  say(
    `   copied ${results.reduce((s, r) => s + r.records, 0)} records in ${results.reduce((s, r) => s + r.transactions, 0)} transactions (${results.reduce((s, r) => s + r.aborted, 0)} aborted) in ${seconds.toFixed(1)} s`,
  );
  say("4. verifying with a read_committed consumer");
  const v = await verifyExactlyOnce({ bootstrap, ...security, input, output, groupId, partitions });
  say(
    `   input ${v.inputRecords}, output ${v.outputRecords}, missing ${v.missing}, duplicates ${v.duplicates}, unexpected ${v.unexpected}`,
  );
  say(
    `   committed offsets ${JSON.stringify(v.committedOffsets)} vs input end offsets ${JSON.stringify(v.inputEndOffsets)}: ${v.offsetsMatch ? "equal" : "DIFFERENT"}`,
  );
  say(v.ok ? "exactly once: OK" : "exactly once: FAILED");
  return v.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`demo failed: ${String((e as Error)?.message ?? e)}\n`);
    process.exit(1);
  },
);
