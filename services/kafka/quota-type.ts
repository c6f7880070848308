// The three kinds of client quota (Kafka's): bytes produced, bytes fetched, request time.
// Its own file: quota-manager.ts enforces them and quota-metrics.ts counts them.
export type QuotaType = "produce" | "fetch" | "request";
