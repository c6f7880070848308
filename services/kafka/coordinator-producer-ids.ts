// Producer ids for Kafka clients' idempotent producers: InitProducerId without a transactional
// id on any live transaction coordinator (each hands out ids from its own block), through the
// process's transport. Tries each coordinator once per call; failures reject with a TernError.
import { TernError } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import type { ServiceTransport } from "../../libs/runtime/transport.js";

const CALL_TIMEOUT_MS = 5_000;

export interface ProducerIdSource {
  next(): Promise<{ producerId: bigint; producerEpoch: number }>;
}

export function coordinatorProducerIds(
  coordinators: () => readonly string[],
  transport: ServiceTransport,
): ProducerIdSource {
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
          const r = await transport.unary(
            "TransactionCoordinator",
            address,
            "InitProducerId",
            { transactionalId: "", transactionTimeoutMs: 0, producerId: "-1", producerEpoch: -1 },
            { timeoutMs: CALL_TIMEOUT_MS },
          );
          turn++;
          return { producerId: BigInt(r.producerId), producerEpoch: r.producerEpoch };
        } catch (e) {
          last = fromGrpcError(e);
        }
      }
      throw last;
    },
  };
}
