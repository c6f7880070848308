// Which transaction coordinator calls may be hedged (hedge.ts): sent to a second node while the
// first is silent, the first answer kept and the others dropped. A dropped copy may still be
// applied, so only a call whose copy changes nothing the kept answer does not account for may go
// twice. EndTxn, AddPartitionsToTxn and AddOffsetsToTxn qualify: a copy is the same add, or a
// retry the coordinator recognises, or carries an epoch it refuses once the client moved on.
// InitProducerId does not: every copy that presents no identity is a new instance whose bump
// fences the one before (the client may keep the first answer while the second bump fenced it),
// and a copy presenting one is recognised only until the client begins its next transaction,
// which a late copy then fences. InitProducerId is therefore sent once per attempt; a retry
// comes only after the attempt failed, and the client keeps that retry's answer.

/** Whether a TransactionCoordinator call may be sent to a second node while the first is silent. */
export function isHedgeableTxnCall(method: string): boolean {
  return method !== "InitProducerId";
}
