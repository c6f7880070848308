// V8 flags (and, below, malloc settings) every tern process runs with: local cluster spawns (scripts/cluster), the Raft test
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

/**
 * glibc malloc settings every tern process starts with (environment, so they apply before the
 * first allocation; a value the caller already set wins): the local cluster's spawns and the
 * image (Dockerfile ENV; a test checks it). A broker serving a follower's catch-up allocates 8 MiB
 * read buffers and 1 MiB frames between its cache's 64 KiB records; with glibc's dynamic mmap
 * threshold those large buffers land in the heap after the first one is freed, and the heap they
 * fragment is never given back. Large buffers mmapped (freed straight to the kernel) and two
 * arenas instead of 8 per core: `npm run bench -- storage --gb 4`, RSS growth from 1 to 4 GB
 * retained on the brokers that served the catch-up, +10 MiB at most with these settings against
 * +60 to +139 MiB without (same build, docs/storage.md); broker CPU per MB unchanged.
 */
export const NODE_PROCESS_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: "262144",
  MALLOC_ARENA_MAX: "2",
};
