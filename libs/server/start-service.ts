// Starts one role in this process without touching process-global state (signals, exit):
// config → data dir → logger → metrics registry → gRPC server (health, reflection) bound →
// metrics HTTP → compose() → role services registered. runService() wraps it for a real
// process; tests call it directly.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { collectDefaultMetrics, Registry } from "prom-client";
import { ConfigError, loadServiceConfig, type Role, type ServiceConfig } from "../common/config.js";
import { LimitError } from "../common/limits.js";
import { createLogger, type Logger } from "../common/logger.js";
import { loadTernProto } from "../common/proto.js";
import { prepareDataDir } from "./data-dir.js";
import {
  formatAddress,
  GRPC_FLOW_CONTROL_WINDOW_BYTES,
  GRPC_SERVER_OPTIONS,
} from "../grpc/grpc-options.js";
import { raiseConnectionWindow, raiseStreamWindow } from "./server-flow-control.js";
import { routeGrpcLogs } from "./grpc-logging.js";
import { ProcessHealth } from "./health.js";
import { startMetricsServer, type MetricsServer } from "./metrics-server.js";
import type { Compose, GrpcServiceBinding, ServiceContext, ServiceParts } from "./service.js";
import { describeOsError, StartupError } from "./startup-error.js";
import type { ProcessRuntime } from "../runtime/process-runtime.js";
import { systemRuntime } from "../runtime/system-runtime.js";
import { shutdownService, type ShutdownResult } from "./shutdown.js";
import {
  openTls,
  processCredentials,
  serverCredentials,
  useClientTls,
  type TlsContext,
} from "./tls/credentials.js";
import { peerAuthorizationInterceptor } from "./tls/peer-authorization.js";
import { grpcAuthorizerInterceptor } from "./auth/grpc-authorizer.js";
import type { SecurityView } from "./auth/security-view.js";
import { peerIdentityInterceptor } from "./tls/peer-identity.js";
import {
  nodeIdsOfCertificate,
  NODE_URI_PREFIX,
  rolesOfCertificate,
  ROLE_URI_PREFIX,
} from "./tls/principal.js";
import { SERVICE_TLS_FLAGS, TlsConfigError, type TlsMaterial } from "../common/tls-config.js";
import type { X509Certificate } from "node:crypto";

export interface StartServiceOptions {
  readonly role: Role;
  readonly argv: readonly string[];
  readonly compose: Compose;
  readonly env?: NodeJS.ProcessEnv;
  /** Overrides the logger built from config (tests). */
  readonly logger?: Logger;
  /**
   * The time, timers, randomness and transport compose() passes down; the system's by default
   * (then closed with the process). A given runtime is its owner's to close.
   */
  readonly runtime?: ProcessRuntime;
}

export interface RunningService {
  readonly config: ServiceConfig;
  readonly logger: Logger;
  readonly health: ProcessHealth;
  readonly metrics: Registry;
  /** The bound gRPC port (differs from config when --listen asked for port 0). */
  readonly grpcPort: number;
  readonly metricsPort: number;
  /** Idempotent: NOT_SERVING → drain → stop gRPC (bounded) → close. */
  shutdown(reason: string): Promise<ShutdownResult>;
}

export async function startService(options: StartServiceOptions): Promise<RunningService> {
  const config = loadConfig(options);
  const dataDir = prepareDataDir(config.dataDir, {
    clusterId: config.clusterId,
    nodeId: config.nodeId,
    role: config.role,
  });
  const logger =
    options.logger ??
    createLogger({ level: config.logLevel, component: options.role, nodeId: config.nodeId });
  routeGrpcLogs(logger);
  const metrics = new Registry();
  metrics.setDefaultLabels({ role: config.role, node_id: String(config.nodeId) });
  collectDefaultMetrics({ register: metrics });
  const proto = loadTernProto();
  const health = new ProcessHealth();
  const tls = openServiceTls(config, logger);
  // The process's outgoing channels (peers, controllers, health) use the same certificate.
  if (tls) useClientTls(tls);
  // compose() supplies the role's view of ACLs and users (setSecurityView) once it has one.
  let securityView: SecurityView | undefined;
  // With TLS: the peer-method table, then authentication and (--grpc-authorizer acl) ACLs.
  // Plaintext has no identities and no interceptor at all (the development default).
  const interceptors = tls
    ? [
        peerAuthorizationInterceptor(logger),
        peerIdentityInterceptor(config.role, logger),
        grpcAuthorizerInterceptor({
          logger,
          authorizer: config.grpcAuthorizer,
          adminGuard: config.authenticationRequired
            ? {
                superUsers:
                  config.grpcAuthorizer?.superUsers ?? config.kafkaAuthorizer?.superUsers ?? [],
              }
            : undefined,
          view: () => securityView,
        }),
      ]
    : undefined;
  const server = new grpc.Server(
    interceptors ? { ...GRPC_SERVER_OPTIONS, interceptors } : GRPC_SERVER_OPTIONS,
  );
  if (!raiseStreamWindow(server, GRPC_FLOW_CONTROL_WINDOW_BYTES))
    logger.warn(
      "cannot raise the gRPC stream window (grpc-js internals changed): large requests will be slower",
    );
  health.addToServer(server);
  new ReflectionService({ ...proto.packageDefinition, ...healthPackageDefinition() }).addToServer(
    server,
  );
  const grpcPort = await bindServer(server, config, tls);
  if (!raiseConnectionWindow(server, GRPC_FLOW_CONTROL_WINDOW_BYTES))
    logger.warn(
      "cannot raise the gRPC connection window (grpc-js internals changed): large requests will be slower",
    );
  let metricsServer: MetricsServer;
  try {
    metricsServer = await startMetricsServer({
      ...config.metricsListen,
      registry: metrics,
      isReady: () => health.isReady(),
    });
  } catch (e) {
    server.forceShutdown();
    throw e;
  }
  const register = (binding: GrpcServiceBinding): void => {
    server.addService(binding.definition, binding.implementation);
    health.addService(binding.definition);
  };
  // The process's calls to other services present its certificate (useClientTls above).
  const ownRuntime =
    options.runtime === undefined ? systemRuntime(processCredentials()) : undefined;
  const ctx: ServiceContext = {
    config,
    logger,
    proto: proto.grpc,
    metrics,
    runtime: options.runtime ?? ownRuntime!,
    dataDir,
    ...(tls ? { tls } : {}),
    setReady: (ready) => {
      health.setReady(ready);
      logger.info({ ready, services: health.services() }, "readiness changed");
    },
    addService: register,
    setSecurityView: (view) => {
      securityView = view;
    },
  };
  let parts: ServiceParts;
  try {
    const composed = await options.compose(ctx);
    // The transport outlives every part that calls through it.
    parts = {
      ...composed,
      close: async () => {
        try {
          await composed.close();
        } finally {
          ownRuntime?.transport.close();
        }
      },
    };
  } catch (e) {
    ownRuntime?.transport.close();
    server.forceShutdown();
    await metricsServer.close();
    // Contradicting limits are a configuration error: one line, exit code 2.
    if (e instanceof LimitError) throw new StartupError(e.message, { cause: e });
    throw e;
  }
  // A role that needs no blank-disk check has not claimed its directory yet.
  dataDir.claim();
  for (const binding of parts.services) register(binding);
  logger.info(
    {
      listen: formatAddress(config.listen.host, grpcPort),
      tls: tls !== undefined,
      metricsPort: metricsServer.port,
      dataDir: config.dataDir,
      services: health.services(),
    },
    "started",
  );
  let shutdownPromise: Promise<ShutdownResult> | undefined;
  return {
    config,
    logger,
    health,
    metrics,
    grpcPort,
    metricsPort: metricsServer.port,
    shutdown: (reason) => {
      shutdownPromise ??= shutdownService({
        reason,
        server,
        health,
        parts,
        metricsServer,
        logger,
        timeoutMs: config.shutdownTimeoutMs,
      });
      return shutdownPromise;
    },
  };
}

function loadConfig(options: StartServiceOptions): ServiceConfig {
  try {
    return loadServiceConfig(options.role, options.argv, options.env ?? process.env);
  } catch (e) {
    if (e instanceof ConfigError) throw new StartupError(e.message, { cause: e });
    throw e;
  }
}

/** Checks the TLS files (one-line StartupError on a problem) and that the certificate is this process's: its role, and its node id when it names one. A reload is held to the same check. */
function openServiceTls(config: ServiceConfig, logger: Logger): TlsContext | undefined {
  if (config.tls === undefined) return undefined;
  const certFile = config.tls.certFile;
  const mismatch = (m: TlsMaterial): string | undefined =>
    certificateMismatch(
      config.role,
      config.nodeId,
      m.leaf!,
      `${SERVICE_TLS_FLAGS.cert} ${certFile}`,
    );
  let tls: TlsContext;
  try {
    tls = openTls(config.tls, SERVICE_TLS_FLAGS, {
      validate: (m) => {
        const reason = mismatch(m);
        if (reason !== undefined) throw new TlsConfigError(reason);
      },
      reloaded: (m) =>
        logger.info(
          {
            subject: m.leaf?.subject.split("\n").join(", "),
            serial: m.leaf?.serialNumber,
            validTo: m.leaf?.validTo,
          },
          "TLS certificate reloaded",
        ),
      rejected: (e) =>
        logger.warn(
          { reason: e.message },
          "TLS files changed but do not check out; keeping the current certificate",
        ),
    });
  } catch (e) {
    if (e instanceof TlsConfigError) throw new StartupError(e.message, { cause: e });
    throw e;
  }
  const reason = mismatch(tls.provider.current());
  if (reason !== undefined) throw new StartupError(reason);
  return tls;
}

/** Why this certificate is not the one of this process (role, node id), or undefined. */
function certificateMismatch(
  role: Role,
  nodeId: number,
  leaf: X509Certificate,
  what: string,
): string | undefined {
  const roles = rolesOfCertificate(leaf);
  if (roles.length !== 1 || roles[0] !== role)
    return `${what}: a ${role} needs a certificate with the SAN URI ${ROLE_URI_PREFIX}${role}${roles.length > 0 ? ` (this one says ${roles.join(", ")})` : ""}`;
  const ids = nodeIdsOfCertificate(leaf);
  if (ids.length > 1 || (ids.length === 1 && ids[0] !== nodeId))
    return `${what}: the certificate is bound to ${ids.map((i) => `${NODE_URI_PREFIX}${i}`).join(", ")}, this process is node ${nodeId} (${NODE_URI_PREFIX}${nodeId})`;
  return undefined;
}

async function bindServer(
  server: grpc.Server,
  config: ServiceConfig,
  tls: TlsContext | undefined,
): Promise<number> {
  const address = formatAddress(config.listen.host, config.listen.port);
  try {
    return await new Promise<number>((resolveBind, rejectBind) => {
      server.bindAsync(address, serverCredentials(tls), (err, port) =>
        err ? rejectBind(err) : resolveBind(port),
      );
    });
  } catch (e) {
    server.forceShutdown();
    throw new StartupError(`cannot listen on ${address}: ${describeOsError(e)}`, { cause: e });
  }
}

let healthDefinition: protoLoader.PackageDefinition | undefined;

/** grpc.health.v1 as a package definition, so reflection lists it too. */
function healthPackageDefinition(): protoLoader.PackageDefinition {
  healthDefinition ??= protoLoader.loadSync(healthProtoPath, {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return healthDefinition;
}
