// Producer ids are handed out in blocks (Kafka's ProducerIdManager). The next free id is part
// of the replicated state, and a block is returned to its requester only after the command
// that advanced it was applied, so no id is ever handed out twice across failovers.
import { assert } from "../../libs/common/assert.js";
import { PRODUCER_ID_BLOCK_SIZE } from "../../libs/metadata/types.js";

/** Producer ids are int64 on the wire; stop well before overflow. */
const PRODUCER_ID_MAX = (1n << 63n) - 1n;

export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly count: number;
}

export class ProducerIdBlocks {
  constructor(
    private nextId: bigint = 0n,
    readonly blockSize: number = PRODUCER_ID_BLOCK_SIZE,
  ) {
    assert(nextId >= 0n, "producer id cursor must be non-negative");
    assert(
      Number.isSafeInteger(blockSize) && blockSize > 0,
      "block size must be a positive integer",
    );
  }

  /** The next id that has never been handed out. */
  next(): bigint {
    return this.nextId;
  }

  /** Returns undefined when the id space is exhausted (an operating error, reported to the caller). */
  allocate(): ProducerIdBlock | undefined {
    const first = this.nextId;
    if (first + BigInt(this.blockSize) - 1n > PRODUCER_ID_MAX) return undefined;
    this.nextId = first + BigInt(this.blockSize);
    return { firstProducerId: first, count: this.blockSize };
  }
}
