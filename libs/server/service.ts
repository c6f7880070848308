// The contract between the process runtime (runService) and each role's compose().
// compose() builds the role's parts from the context; the runtime owns the process: config,
// logger, the one gRPC server, health, reflection, metrics, signals and exit codes.
import type * as grpc from "@grpc/grpc-js";
import type { Registry } from "prom-client";
import type { ServiceConfig, Role } from "../common/config.js";
import type { Logger } from "../common/logger.js";
import type { DataDir } from "./data-dir.js";
import type { TlsContext } from "./tls/credentials.js";
import type { SecurityView } from "./auth/security-view.js";
import type { TernGrpcPackage } from "../common/proto-types/index.js";
import type { ProcessRuntime } from "../runtime/process-runtime.js";

export interface GrpcServiceBinding {
  readonly definition: grpc.ServiceDefinition;
  readonly implementation: grpc.UntypedServiceImplementation;
}

export interface ServiceContext {
  readonly config: ServiceConfig;
  readonly logger: Logger;
  /** The grpc package object from loadTernProto(): proto.tern.v1.Broker etc. */
  readonly proto: TernGrpcPackage;
  readonly metrics: Registry;
  /** Time, timers and randomness: every part compose() builds takes them from here. */
  readonly runtime: ProcessRuntime;
  /**
   * The data directory and its identity (meta.properties). When `blank`, compose() checks that
   * the node is not recorded as a member of Raft groups it would rejoin with an empty log, then
   * calls `claim()` before opening anything. Absent in tests that build a context by hand.
   */
  readonly dataDir?: DataDir;
  /** The process's TLS files and their reloading provider when TLS is on (the Kafka listener uses them too). */
  readonly tls?: TlsContext;
  /** Marks every service of this process (and the overall "" status) SERVING or NOT_SERVING. */
  setReady(ready: boolean): void;
  /**
   * Optional: registers a gRPC service on the (already listening) server before compose()
   * returns, e.g. the Raft transport, which peers must reach while compose() waits for an
   * election. Services returned in ServiceParts.services are registered after compose().
   */
  addService?(binding: GrpcServiceBinding): void;
  /**
   * Optional: where the gRPC authorizer (libs/server/auth) reads ACLs and SCRAM users from;
   * each role passes its view of the cluster metadata. Until then, calls that need it are
   * answered "retry" (BROKER_NOT_AVAILABLE).
   */
  setSecurityView?(view: SecurityView): void;
}

export interface ServiceParts {
  readonly services: ReadonlyArray<GrpcServiceBinding>;
  /** Graceful: transfer leaderships away, finish in-flight work. Bounded by the runtime. */
  drain(): Promise<void>;
  /** Releases everything (databases, timers, clients). */
  close(): Promise<void>;
}

export type Compose = (ctx: ServiceContext) => Promise<ServiceParts>;

export type { Role };
