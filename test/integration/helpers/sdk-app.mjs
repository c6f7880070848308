// A stand-in application for test/integration/sdk-package.test.ts: plain ESM that knows tern
// only as the installed @tern/client package. It creates a topic, produces a few keyed records,
// reads them back from the beginning and prints one JSON line: {"sent": [...], "read": [...]}.
// Usage: node sdk-app.mjs <bootstrap> <topic> <count>
import { Admin, Consumer, Producer } from "@tern/client";

const [bootstrap, topic, countText] = process.argv.slice(2);
const count = Number(countText);
/** Bound on the read-back loop. */
const READ_TIMEOUT_MS = 30_000;

const admin = new Admin({ bootstrap });
try {
  const [created] = await admin.createTopics([
    { name: topic, partitions: 1, replicationFactor: 1 },
  ]);
  if (created?.error) throw created.error;
  await admin.waitForLeaders([topic]);
} finally {
  await admin.close();
}

const producer = new Producer({ bootstrap });
const sent = [];
try {
  for (let i = 0; i < count; i++) {
    const meta = await producer.send({ topic, key: `k${i}`, value: `v${i}` });
    sent.push({ partition: meta.partition, offset: String(meta.offset) });
  }
} finally {
  await producer.close();
}

const consumer = new Consumer({ bootstrap });
const read = [];
try {
  consumer.assign([{ topic, partition: 0 }]);
  await consumer.seekToBeginning();
  const deadline = Date.now() + READ_TIMEOUT_MS;
  while (read.length < count && Date.now() < deadline) {
    for (const r of await consumer.poll({ timeoutMs: 500 })) {
      read.push({
        offset: String(r.offset),
        key: r.key?.toString() ?? null,
        value: r.value?.toString() ?? null,
      });
    }
  }
} finally {
  await consumer.close();
}
console.log(JSON.stringify({ sent, read }));
