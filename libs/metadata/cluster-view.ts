// A process's view of the cluster: the latest metadata the controllers' watch delivered
// (undefined until the first arrives). One object that the process's parts read, instead of
// each closing over a mutable variable of compose().
import type { ClusterMetadata } from "./types.js";

export class ClusterView {
  private latest: ClusterMetadata | undefined;

  /**
   * The latest metadata; undefined until the watch delivered one. A bound function, so a part
   * that takes a `() => ClusterMetadata | undefined` is handed `view.current` itself.
   */
  readonly current = (): ClusterMetadata | undefined => this.latest;

  /** Replaces the view (the watch's callback). */
  update(metadata: ClusterMetadata): void {
    this.latest = metadata;
  }
}
