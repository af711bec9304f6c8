/**
 * The pod's workload containers as the agent sees them: each supervisor's socket in the shared
 * volume (`/steward/run/<container>.sock`). Watched, so the unit runs `<container>-workload-ready`
 * once each supervisor answers (again when a restarted container brings a new supervisor, which
 * has lost its layer), and handed to the hook tools.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../api/core";
import type { PingResult } from "./protocol";
import { SupervisorClient } from "./supervisor-client";

export interface WorkloadContainersOptions {
  /** Where the supervisors' sockets are. */
  dir: string;
  log: Logger;
  /** Called when a supervisor starts answering (or a new one replaced it). */
  onChange: () => void;
  /** @default 1000 */
  pollMs?: number;
}

export class WorkloadContainers {
  /** Container → the bootId of the supervisor that answers now. */
  private readonly answering = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly o: WorkloadContainersOptions) {}

  start(): void {
    const tick = (): void => {
      void this.poll().finally(() => {
        if (!this.stopped) {
          this.timer = setTimeout(tick, this.o.pollMs ?? 1000);
          this.timer.unref();
        }
      });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The containers whose socket is in the shared volume, by name. */
  async containers(): Promise<string[]> {
    const entries = await readdir(this.o.dir).catch(() => [] as string[]);
    return entries
      .filter((e) => e.endsWith(".sock"))
      .map((e) => e.slice(0, -".sock".length))
      .sort();
  }

  client(container: string): SupervisorClient {
    return new SupervisorClient(join(this.o.dir, `${container}.sock`), container);
  }

  /** Supervisors answering now: container → its bootId. */
  ready(): Record<string, string> {
    return Object.fromEntries([...this.answering].sort(([a], [b]) => a.localeCompare(b)));
  }

  private async poll(): Promise<void> {
    let changed = false;
    for (const name of await this.containers()) {
      const ping = await this.client(name)
        .call<PingResult>({ op: "ping" }, 2000)
        .catch(() => undefined);
      if (!ping) {
        this.answering.delete(name);
        continue;
      }
      if (this.answering.get(name) !== ping.bootId) {
        this.answering.set(name, ping.bootId);
        this.o.log.info("workload container's supervisor answers", { container: name, supervisor: ping.bootId });
        changed = true;
      }
    }
    if (changed && !this.stopped) this.o.onChange();
  }
}
