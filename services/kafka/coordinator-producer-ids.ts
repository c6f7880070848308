// Producer ids for Kafka clients' idempotent producers: InitProducerId without a transactional
// id on any live transaction coordinator (each hands out ids from its own block), through the
// SDK's gRPC transport (the one bounded client cache). Tries each coordinator once per call.
import { TernError } from "../../libs/common/errors.js";
import { GrpcTransport } from "../../libs/client/network/grpc-transport.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";

const CALL_TIMEOUT_MS = 5_000;

export interface ProducerIdSource {
  next(): Promise<{ producerId: bigint; producerEpoch: number }>;
  close(): void;
}

export function coordinatorProducerIds(coordinators: () => readonly string[]): ProducerIdSource {
  const pool = new GrpcTransport(processCredentials());
  let turn = 0;
  return {
    async next() {
      const addresses = coordinators();
      if (addresses.length === 0)
        throw new TernError("COORDINATOR_NOT_AVAILABLE", "no live transaction coordinator");
      let last: unknown;
      for (let i = 0; i < addresses.length; i++) {
        const address = addresses[(turn + i) % addresses.length]!;
        try {
          const r = await pool.call(
            "TransactionCoordinator",
            address,
            "InitProducerId",
            { transactionalId: "", transactionTimeoutMs: 0, producerId: "-1", producerEpoch: -1 },
            CALL_TIMEOUT_MS,
          );
          turn++;
          return { producerId: BigInt(r.producerId), producerEpoch: r.producerEpoch };
        } catch (e) {
          last = e;
        }
      }
      throw last;
    },
    close: () => pool.close(),
  };
}
