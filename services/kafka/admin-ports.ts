// What the Kafka listener's admin APIs (topic-admin-api.ts, quota-apis.ts) ask of the
// controller side; kafka-deps.ts carries them. Apart from the APIs so that kafka-deps.ts does
// not import the modules that import it.
import type {
  ClientQuotaEntry,
  QuotaAlteration,
  QuotaFilterComponent,
} from "../../libs/common/client-quota.js";
import type { TernError } from "../../libs/common/errors.js";
import type { TopicOutcome, TopicSpec } from "../../libs/metadata/controller-client.js";

/** What the listener asks of the controller (libs/metadata/controller-client.ts). */
export interface TopicAdmin {
  createTopics(
    topics: readonly TopicSpec[],
    options: { validateOnly?: boolean },
  ): Promise<TopicOutcome[]>;
  deleteTopics(names: readonly string[]): Promise<TopicOutcome[]>;
  /** Raises partition counts to the given totals (CreatePartitions). */
  createPartitions(
    changes: ReadonlyArray<{ name: string; totalCount: number }>,
    options: { validateOnly?: boolean },
  ): Promise<TopicOutcome[]>;
  /** Every topic config key and its default (what a topic without the key gets). */
  configDefaults(): ReadonlyMap<string, string>;
}

/** What the listener asks the controller (kafka-deps.ts). */
export interface QuotaAdmin {
  alterClientQuotas(
    alterations: readonly QuotaAlteration[],
    validateOnly: boolean,
  ): Promise<Array<TernError | undefined>>;
  describeClientQuotas(
    components: readonly QuotaFilterComponent[],
    strict: boolean,
  ): Promise<ClientQuotaEntry[]>;
}
