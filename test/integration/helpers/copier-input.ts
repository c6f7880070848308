// The copier tests' starting point: topics "in" and "out" (RF 3) with leaders, and `records`
// keyed records "record-<i>" in "in".
import { Admin, Producer } from "../../../libs/client/index.js";

export async function seedCopierTopics(
  bootstrap: string,
  partitions: number,
  records: number,
): Promise<void> {
  const admin = new Admin({ bootstrap });
  for (const r of await admin.createTopics([
    { name: "in", partitions, replicationFactor: 3 },
    { name: "out", partitions, replicationFactor: 3 },
  ]))
    if (r.error) throw r.error;
  await admin.waitForLeaders(["in", "out"]);
  await admin.close();
  const producer = new Producer({ bootstrap, lingerMs: 5, batchSize: 64 * 1024 });
  await Promise.all(
    Array.from({ length: records }, (_, i) =>
      producer.send({ topic: "in", key: `k${i}`, value: `record-${i}` }),
    ),
  );
  await producer.close();
}
