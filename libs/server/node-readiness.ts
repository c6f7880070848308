// When a broker or coordinator is ready: registered with the controller, the metadata watch
// delivered a view, that view lists this node in its role, and the role's own gate (a broker's
// replica catch-up, catch-up-gate.ts) has passed. Reported to the process's health on change.
import type { ClusterView } from "../metadata/cluster-view.js";
import type { Role } from "../metadata/types.js";

/** A role's extra condition: checked once the basic one holds, passed once for the process's life. */
export interface ReadinessGate {
  hasPassed(): boolean;
  /** Starts checking (idempotent); onPassed runs when the gate passes. */
  start(onPassed: () => void): void;
}

export interface NodeReadinessOptions {
  readonly role: Role;
  readonly nodeId: number;
  readonly view: ClusterView;
  /** The process's health (ServiceContext.setReady). */
  readonly setReady: (ready: boolean) => void;
  readonly gate?: ReadinessGate;
}

export class NodeReadiness {
  private registered = false;
  private ready = false;

  constructor(private readonly options: NodeReadinessOptions) {}

  /** Node membership's callback: registration gained or lost. */
  setRegistered(registered: boolean): void {
    this.registered = registered;
    this.refresh();
  }

  /** Re-evaluates after anything it depends on changed (a new view applied, the gate passed). */
  readonly refresh = (): void => {
    const { role, nodeId, view, gate } = this.options;
    const metadata = view.current();
    const listed =
      this.registered &&
      metadata !== undefined &&
      metadata.nodes.some((n) => n.role === role && n.nodeId === nodeId);
    if (listed && gate !== undefined && !gate.hasPassed()) gate.start(this.refresh);
    const next = listed && (gate === undefined || gate.hasPassed());
    if (next === this.ready) return;
    this.ready = next;
    this.options.setReady(next);
  };

  /** Draining: not ready, whatever the conditions say. */
  drop(): void {
    this.ready = false;
    this.options.setReady(false);
  }
}
