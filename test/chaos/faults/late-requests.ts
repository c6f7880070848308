// Delays as a client-side hook: a copy of an AddPartitionsToTxn or EndTxn the client already
// got an answer to is sent again later, after the client has moved on (retried, ended, begun the
// next transaction). To the coordinator it is exactly a request that was delayed in the network
// and arrives late and out of order. It must be refused by epoch or recognised as a retry and
// never change a later transaction. Choices and delays come from the seed.
import type { Random } from "../../../libs/common/prng.js";
import type { CoordinatorClient } from "../../../services/coordinator/coordinator-client.js";
import { errorName } from "../workloads/cluster-clients.js";

const INFLIGHT_MAX = 64;
const LATE_CALL_TIMEOUT_MS = 5_000;

export interface LateRequestStats {
  sent: number;
  /** Answer code (NONE or the error name) -> count. */
  answers: Record<string, number>;
}

export class LateRequests {
  readonly stats: LateRequestStats = { sent: 0, answers: {} };
  private inflight = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private active = false;

  constructor(
    private readonly coordinators: CoordinatorClient,
    private readonly rng: Random,
    private readonly probability: number,
    private readonly delayMsMin: number,
    private readonly delayMsMax: number,
  ) {}

  /** Late copies are sent only while active (the scenario's fault window). */
  setActive(active: boolean): void {
    this.active = active;
  }

  maybeResend(
    transactionalId: string,
    method: "AddPartitionsToTxn" | "EndTxn",
    request: Record<string, unknown>,
  ): void {
    if (!this.active || this.inflight >= INFLIGHT_MAX || !this.rng.bool(this.probability)) return;
    const delayMs = this.rng.int(this.delayMsMin, this.delayMsMax + 1);
    this.inflight++;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.stats.sent++;
      // Fire-and-forget by design: a failed late copy is counted under its error name below.
      void this.coordinators
        .txnCall(transactionalId, method, request, LATE_CALL_TIMEOUT_MS)
        .then(
          () => "NONE",
          (e) => errorName(e),
        )
        .then((code) => {
          this.stats.answers[`${method}:${code}`] =
            (this.stats.answers[`${method}:${code}`] ?? 0) + 1;
          this.inflight--;
        });
    }, delayMs);
    this.timers.add(timer);
  }

  /** Drops the copies not sent yet and waits (bounded) for those in flight. */
  async drain(timeoutMs: number): Promise<void> {
    this.active = false;
    for (const t of this.timers) clearTimeout(t);
    this.inflight -= this.timers.size;
    this.timers.clear();
    const deadline = Date.now() + timeoutMs;
    while (this.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }
}
