// DescribeLogCleaning (admin; `tern topics describe`): how far each partition's leader replica
// has cleaned its log (docs/storage.md, "Compaction"): the dirty ratio the cleaner chooses by
// and the last offset its cleans covered, from the log's stored clean point.
import type {
  DescribeLogCleaningRequest__Output,
  DescribeLogCleaningResponse__Output,
} from "../../libs/common/proto-types/index.js";
import type { PartitionDirectory } from "./local-partition.js";
import { eachLeaderPartition } from "./leader-partitions.js";
import { errorFields } from "./wire.js";

export function createDescribeLogCleaningHandler(deps: {
  directory: PartitionDirectory;
}): (request: DescribeLogCleaningRequest__Output) => Promise<DescribeLogCleaningResponse__Output> {
  return async (request) => ({
    partitions: eachLeaderPartition(
      deps.directory,
      request?.partitions,
      (found, topic, partition) => {
        const settings = found.local?.compaction();
        const state = found.local?.stateMachine.cleaningState(settings?.minCompactionLagMs ?? 0);
        return {
          topic,
          partition,
          ...errorFields(found.error),
          leader: found.leader,
          compacted: settings?.compact ?? false,
          dirtyRatio: state?.view.ratio ?? 0,
          cleanableBytes: String(state?.view.cleanableBytes ?? 0),
          dirtyBytes: String(state?.view.dirtyBytes ?? 0),
          lastCleanedOffset: String(state?.lastCleanedOffset ?? -1n),
        };
      },
    ),
  });
}
