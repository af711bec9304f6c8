/**
 * The local kind's machine broker (substrates/kind.ts `machines()`): agent processes on the
 * controller's host (./machines.ts), made ready on first use: a controller running as root starts
 * them as an unprivileged user, in directories outside its data directory, so a controller that never
 * has a local machine makes no user nor directory. A machine that came by migration from another
 * local controller on this host keeps running where that one started it (its `dir`): the agent never moved.
 */
import { dirname } from "node:path";
import type { MachineSpec, MachineTarget, Progress, StartedMachine } from "../brokers";
import type { MachineHost, MachinesOfKind } from "../kind";
import type { AgentIdentity } from "./agent-user";
import { localAgentIdentity } from "./agent-user";
import { placeAgentsDir, readableAgentEntry } from "./agents-dir";
import { LocalMachines } from "./machines";

/** Where a local machine's agent runs: its own directory when it came by migration (absent: under the controller's). */
export interface LocalPlacement {
  dir?: string;
}

export class AgentProcesses implements MachinesOfKind<LocalPlacement> {
  /** Set on first use, once the agents' user and directories are ready. */
  private own?: Promise<LocalMachines>;
  private runAs?: AgentIdentity;
  /** The agent script as agents can read it (see readableAgentEntry). */
  private agentEntry?: string;
  /** Machines adopted by migration, by the directory they run under. */
  private readonly adopted = new Map<string, LocalMachines>();

  constructor(private readonly host: MachineHost) {}

  async startMachine(
    spec: MachineSpec<LocalPlacement>,
    _o?: { progress?: Progress; signal?: AbortSignal },
  ): Promise<StartedMachine> {
    return (await this.machinesOf(spec.placement)).startMachine({ ...spec, placement: undefined });
  }

  async stopMachine(target: MachineTarget<LocalPlacement>): Promise<void> {
    await (await this.machinesOf(target.placement)).stopMachine({ ...target, placement: undefined });
  }

  close(): void {}

  private async machinesOf(p: LocalPlacement | undefined): Promise<LocalMachines> {
    const own = await this.ready();
    if (!p?.dir) return own;
    const root = dirname(dirname(p.dir));
    let machines = this.adopted.get(root);
    if (!machines) {
      machines = new LocalMachines({
        machinesDir: root,
        agentEntry: this.agentEntry ?? this.host.agentEntry,
        ...(this.runAs ? { runAs: this.runAs } : {}),
      });
      this.adopted.set(root, machines);
    }
    return machines;
  }

  /** Makes the agents' user and directories ready (once; again after a failure). */
  private ready(): Promise<LocalMachines> {
    this.own ??= this.prepare().catch((err: unknown) => {
      this.own = undefined;
      throw err;
    });
    return this.own;
  }

  private async prepare(): Promise<LocalMachines> {
    const { agents, machinesDir } = this.host;
    const runAs = agents.asController ? undefined : await localAgentIdentity(agents.user);
    let agentEntry = this.host.agentEntry;
    if (runAs) {
      await placeAgentsDir(agents.dataDir, agents.dir);
      agentEntry = await readableAgentEntry(agents.dataDir, agents.dir, agentEntry, runAs);
    }
    this.runAs = runAs;
    this.agentEntry = agentEntry;
    return new LocalMachines({ machinesDir, agentEntry, ...(runAs ? { runAs } : {}) });
  }
}
