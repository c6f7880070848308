// The suites that can share one default cluster (test/integration/shared-cluster/*.suite.ts:
// each creates its own topics and ids and never stops, kills or pauses a process) run here
// against one cluster, in this order. A suite that needs its own cluster shape, environment or
// faults stays in a file of its own. Needs `npm run build`.
import { afterAll } from "vitest";
import { stopSharedCluster } from "./helpers/shared-cluster.js";
import "./shared-cluster/cli.suite.js";
import "./shared-cluster/cli-details.suite.js";
import "./shared-cluster/topic-admin.suite.js";
import "./shared-cluster/kafka-admin-apis.suite.js";
import "./shared-cluster/kafka-flexible.suite.js";
import "./shared-cluster/kafka-kcat.suite.js";
import "./shared-cluster/python.suite.js";
import "./shared-cluster/txn-broker.suite.js";
import "./shared-cluster/stored-batch.suite.js";
import "./shared-cluster/group-txn-e2e.suite.js";
import "./shared-cluster/demo-group.suite.js";

afterAll(stopSharedCluster, 60_000);
