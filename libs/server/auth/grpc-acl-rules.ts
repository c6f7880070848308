// Which ACL each client RPC of the gRPC API needs: Kafka's operation and resource for the
// equivalent Kafka API (KafkaApis / AclAuthorizer), the same table the Kafka listener follows
// (services/kafka/kafka-access.ts, docs/security.md "Authorization"). Three kinds of rule:
//   check         the whole request: the first refused resource refuses the call, the handler
//                 never runs (gRPC PERMISSION_DENIED carrying the *_AUTHORIZATION_FAILED code);
//   perPartition  requests of partitions (Produce, Fetch, ListOffsets, DeleteRecords): a refused
//                 partition is answered TOPIC_AUTHORIZATION_FAILED in place, the handler sees
//                 only the others (Kafka's per-partition answer);
//   filter        listings (Metadata, ListTopics, ListGroups, ListTransactions, OffsetFetch of
//                 all partitions): what the caller may not DESCRIBE is left out, as Kafka's
//                 Metadata, ListGroups and OffsetFetch do;
//   rewrite       the request the handler sees (ConsumerGroupHeartbeat: the topics a regex
//                 subscription may not match).
// A tern method missing here needs CLUSTER_ACTION on the cluster (Kafka's inter-broker rule);
// the unit test checks that every method of every tern service is in this table or is
// peer-only (peer-methods.ts), so nothing new is open by accident.
import { CLUSTER_RESOURCE_NAME, type Operation, type ResourceType } from "../../common/acl.js";
import { mayWriteIdempotently, refusal, type RequestAccess } from "../../common/acl-access.js";
import { TernError } from "../../common/errors.js";

export interface RuleContext {
  readonly access: RequestAccess;
  /** Existing data topics (InitProducerId without a transactional id). */
  topicNames(): readonly string[];
}

/**
 * A decoded message as the rules read it: they apply to every service's requests by path, so
 * each field is read through str() / list(), which accept any shape.
 */
export type Message = Readonly<Record<string, unknown>>;
type Check = (req: Message, ctx: RuleContext) => TernError | undefined;

export interface GrpcAclRule {
  readonly check?: Check;
  /** The operation each partition of `partitions` needs on its topic. */
  readonly perPartition?: Operation;
  readonly filter?: (res: Message, ctx: RuleContext) => Message;
  readonly rewrite?: (req: Message, ctx: RuleContext) => Message;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const list = (v: unknown): Message[] => (Array.isArray(v) ? v : []);

/** One resource named by the request. */
function need(op: Operation, type: ResourceType, nameOf: (req: Message) => string): Check {
  return (req, { access }) => refusal(access, op, type, nameOf(req));
}

/** Every resource named in a list of the request (duplicates checked once). */
function each(op: Operation, type: ResourceType, namesOf: (req: Message) => string[]): Check {
  return (req, { access }) => {
    for (const name of new Set(namesOf(req))) {
      const r = refusal(access, op, type, name);
      if (r) return r;
    }
    return undefined;
  };
}

/** Checks in order; the first refusal answers. */
function all(...checks: Check[]): Check {
  return (req, ctx) => {
    for (const c of checks) {
      const r = c(req, ctx);
      if (r) return r;
    }
    return undefined;
  };
}

/** An optional resource: checked only when the request names one. */
function ifNamed(nameOf: (req: Message) => string, check: Check): Check {
  return (req, ctx) => (nameOf(req).length > 0 ? check(req, ctx) : undefined);
}

const cluster = (op: Operation): Check => need(op, "cluster", () => CLUSTER_RESOURCE_NAME);
const txnId = (req: Message): string => str(req.transactionalId);
const groupId = (req: Message): string => str(req.groupId);
const topicsOf = (req: Message): string[] => list(req.partitions).map((p) => str(p.topic));

/** CreateTopics: CREATE on the cluster, or else on each topic (Kafka). */
const createTopics: Check = (req, ctx) => {
  if (ctx.access.allowed("create", "cluster", CLUSTER_RESOURCE_NAME)) return undefined;
  return each("create", "topic", (r) => list(r.topics).map((t) => str(t.name)))(req, ctx);
};

/** InitProducerId: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka 2.8+). */
const initProducerId: Check = (req, ctx) => {
  if (txnId(req).length > 0) return need("write", "transactional-id", txnId)(req, ctx);
  if (mayWriteIdempotently(ctx.access, ctx.topicNames())) return undefined;
  return new TernError(
    "CLUSTER_AUTHORIZATION_FAILED",
    `${ctx.access.principal} may not idempotent-write the cluster nor write any topic`,
  );
};

/** FindCoordinator: DESCRIBE on the group or the transactional id. */
const findCoordinator: Check = (req, ctx) =>
  refusal(
    ctx.access,
    "describe",
    req.keyType === "GROUP" ? "group" : "transactional-id",
    str(req.key),
  );

const describes = (ctx: RuleContext, type: ResourceType, name: string): boolean =>
  ctx.access.allowed("describe", type, name);

export const GRPC_ACL_RULES: ReadonlyMap<string, GrpcAclRule> = new Map<string, GrpcAclRule>([
  // Broker
  [
    "/tern.v1.Broker/Produce",
    { check: ifNamed(txnId, need("write", "transactional-id", txnId)), perPartition: "write" },
  ],
  ["/tern.v1.Broker/Fetch", { perPartition: "read" }],
  ["/tern.v1.Broker/ListOffsets", { perPartition: "describe" }],
  ["/tern.v1.Broker/DeleteRecords", { perPartition: "delete" }],
  // Kafka's DescribeLogDirs asks DESCRIBE on the cluster; these are one topic's figures.
  ["/tern.v1.Broker/DescribeLogCleaning", { perPartition: "describe" }],
  ["/tern.v1.Broker/DescribeProducers", { check: each("read", "topic", topicsOf) }],
  // Kafka's equivalent is DescribeProducers + ListTransactions on those partitions.
  ["/tern.v1.Broker/ListHangingTransactions", { check: each("read", "topic", topicsOf) }],
  // Kafka's kafka-transactions abort sends WriteTxnMarkers: CLUSTER_ACTION.
  ["/tern.v1.Broker/AbortPartitionTransaction", { check: cluster("cluster-action") }],
  // Transaction coordinator
  ["/tern.v1.TransactionCoordinator/FindCoordinator", { check: findCoordinator }],
  ["/tern.v1.TransactionCoordinator/InitProducerId", { check: initProducerId }],
  [
    "/tern.v1.TransactionCoordinator/AddPartitionsToTxn",
    { check: all(need("write", "transactional-id", txnId), each("write", "topic", topicsOf)) },
  ],
  [
    "/tern.v1.TransactionCoordinator/AddOffsetsToTxn",
    { check: all(need("write", "transactional-id", txnId), need("read", "group", groupId)) },
  ],
  ["/tern.v1.TransactionCoordinator/EndTxn", { check: need("write", "transactional-id", txnId) }],
  [
    "/tern.v1.TransactionCoordinator/AbortTransaction",
    { check: need("write", "transactional-id", txnId) },
  ],
  [
    "/tern.v1.TransactionCoordinator/DescribeTransactions",
    { check: each("describe", "transactional-id", (r) => list(r.transactionalIds).map(str)) },
  ],
  [
    "/tern.v1.TransactionCoordinator/ListTransactions",
    {
      filter: (res, ctx) => ({
        ...res,
        transactions: list(res.transactions).filter((t) =>
          describes(ctx, "transactional-id", str(t.transactionalId)),
        ),
      }),
    },
  ],
  // Group coordinator
  [
    "/tern.v1.GroupCoordinator/OffsetCommit",
    { check: all(need("read", "group", groupId), each("read", "topic", topicsOf)) },
  ],
  [
    "/tern.v1.GroupCoordinator/TxnOffsetCommit",
    {
      // Kafka's order: WRITE on the transactional id, READ on the group, READ on each topic.
      check: all(
        need("write", "transactional-id", txnId),
        need("read", "group", groupId),
        each("read", "topic", topicsOf),
      ),
    },
  ],
  [
    "/tern.v1.GroupCoordinator/OffsetFetch",
    {
      check: all(need("describe", "group", groupId), each("describe", "topic", topicsOf)),
      // No partitions named means all of the group's: the answer keeps the DESCRIBE-able topics
      // only (Kafka's OffsetFetch filters them the same way).
      filter: (res, ctx) => ({
        ...res,
        partitions: list(res.partitions).filter((p) => describes(ctx, "topic", str(p.topic))),
      }),
    },
  ],
  [
    "/tern.v1.GroupCoordinator/OffsetDelete",
    { check: all(need("delete", "group", groupId), each("read", "topic", topicsOf)) },
  ],
  [
    "/tern.v1.GroupCoordinator/ConsumerGroupHeartbeat",
    {
      check: all(
        need("read", "group", groupId),
        each("describe", "topic", (r) => list(r.subscribedTopicNames).map(str)),
      ),
      // A regex never hands a member a topic it may not DESCRIBE (Kafka filters its regex
      // matches the same way); what the client put in the field is replaced.
      rewrite: (req, ctx) =>
        str(req.subscribedTopicRegex) === ""
          ? { ...req, regexHiddenTopics: [] }
          : {
              ...req,
              regexHiddenTopics: ctx.topicNames().filter((t) => !describes(ctx, "topic", t)),
            },
    },
  ],
  [
    "/tern.v1.GroupCoordinator/ConsumerGroupDescribe",
    { check: need("describe", "group", groupId) },
  ],
  ["/tern.v1.GroupCoordinator/DeleteGroups", { check: need("delete", "group", groupId) }],
  [
    "/tern.v1.GroupCoordinator/ListGroups",
    {
      filter: (res, ctx) => ({
        ...res,
        groups: list(res.groups).filter((g) => describes(ctx, "group", str(g.groupId))),
      }),
    },
  ],
  // Controller
  ["/tern.v1.Controller/CreateTopics", { check: createTopics }],
  [
    "/tern.v1.Controller/DeleteTopics",
    { check: each("delete", "topic", (r) => list(r.names).map(str)) },
  ],
  [
    "/tern.v1.Controller/AlterTopicConfigs",
    { check: each("alter-configs", "topic", (r) => list(r.topics).map((t) => str(t.name))) },
  ],
  [
    "/tern.v1.Controller/CreatePartitions",
    { check: each("alter", "topic", (r) => list(r.topics).map((t) => str(t.name))) },
  ],
  [
    "/tern.v1.Controller/DescribeTopics",
    { check: each("describe", "topic", (r) => list(r.names).map(str)) },
  ],
  [
    "/tern.v1.Controller/ListTopics",
    {
      filter: (res, ctx) => ({
        ...res,
        names: list(res.names).filter((n) => describes(ctx, "topic", str(n))),
      }),
    },
  ],
  // Internal topics stay listed: they carry placement only (clients find group and
  // transaction coordinators through them); reading them still needs READ.
  [
    "/tern.v1.Controller/Metadata",
    {
      filter: (res, ctx) => {
        const m = res?.metadata as Message | null | undefined; // MetadataResponse.metadata: a ClusterMetadata or null
        return m === undefined || m === null
          ? res
          : {
              ...res,
              metadata: {
                ...m,
                topics: list(m.topics).filter(
                  (t) => t.internal === true || describes(ctx, "topic", str(t.name)),
                ),
              },
            };
      },
    },
  ],
  // The streamed whole-cluster view (tern's own; no Kafka equivalent) is for operators.
  ["/tern.v1.Controller/WatchMetadata", { check: cluster("describe") }],
  ["/tern.v1.Controller/DescribeCluster", { check: cluster("describe") }],
  ["/tern.v1.Controller/AddController", { check: cluster("alter") }],
  ["/tern.v1.Controller/RemoveController", { check: cluster("alter") }],
  ["/tern.v1.Controller/AlterUserScramCredentials", { check: cluster("alter") }],
  ["/tern.v1.Controller/DescribeUserScramCredentials", { check: cluster("describe") }],
  ["/tern.v1.Controller/CreateAcls", { check: cluster("alter") }],
  ["/tern.v1.Controller/DeleteAcls", { check: cluster("alter") }],
  ["/tern.v1.Controller/DescribeAcls", { check: cluster("describe") }],
  // Kafka's rule for its quota APIs: ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster.
  ["/tern.v1.Controller/AlterClientQuotas", { check: cluster("alter-configs") }],
  ["/tern.v1.Controller/DescribeClientQuotas", { check: cluster("describe-configs") }],
]);

/** Methods of tern services not in the table: Kafka's rule for inter-broker requests. */
export const DEFAULT_RULE: GrpcAclRule = { check: cluster("cluster-action") };

/** Standard services anyone may call: health checks (probes) and reflection carry no data. */
export function isOpenMethod(path: string): boolean {
  return path.startsWith("/grpc.health.v1.") || path.startsWith("/grpc.reflection.");
}

export function ruleOf(path: string): GrpcAclRule {
  return GRPC_ACL_RULES.get(path) ?? DEFAULT_RULE;
}
