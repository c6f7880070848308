// V8 flags every tern process runs with: local cluster spawns (scripts/cluster), the Raft test
// and benchmark nodes, the image's ENTRYPOINT and the container commands in deploy/k8s (tests
// check that those match this list). None of them can go in NODE_OPTIONS (node refuses them).
//
// --initial-old-space-size: V8 sizes the first old-generation limits from it. Without it a
// busy Raft process (a small heap, but tens of MB/s of short-lived entry buffers) ran a full
// mark-compact about four times a second. Measured (`npm run bench -- raft --only load`,
// 4 alternating pairs): 64 in flight 17,700 vs 15,700 entries/s (mean), cluster CPU 74 vs 92 ms
// per 1,000 entries, p99 14 vs 20 ms; 50 groups 29,400 vs 26,200. It is a threshold, not a
// reservation: memory is committed as the heap grows. Keep it below the smallest
// --max-old-space-size of deploy/k8s (192 MiB for the controller).
export const NODE_PROCESS_FLAGS: readonly string[] = ["--initial-old-space-size=128"];
