/**
 * Provisioning for `local` models: the leader keeps one agent process (substrates/local) running
 * for each of their live machines, starting one again when it is found dead, and removes the
 * process of a machine that is dying before the machine's record goes. A controller running as root
 * starts them as an unprivileged user, in directories outside its data directory.
 */
import { dirname } from "node:path";
import type { Logger, ModelSubstrate } from "../../api";
import { contractOf } from "../../api";
import type { AgentIdentity } from "../../substrates";
import { LocalMachines, localAgentIdentity, placeAgentsDir, readableAgentEntry } from "../../substrates";
import type { MachineDoc, StateCache, StateOps } from "../state";
import { handedOver } from "../state";
import { Reconciler } from "../workers";
import { holdsStorage } from "./storage-volumes";

/** Machines this provisioner keeps: those of the kind whose machines are processes on the controller's host. */
const onControllerHost = (substrate: ModelSubstrate): boolean => !!contractOf(substrate).onControllerHost;

export interface LocalProvisionerOptions {
  /** Root of the machines' directories: `<root>/<model-uuid>/<machine-id>/`. */
  machinesDir: string;
  /** The agent's entry script. */
  agentEntry: string;
  caCert: string;
  controllerAddresses: () => string[];
  cache: StateCache;
  ops: StateOps;
  log: Logger;
  /**
   * Who agents run as when this controller runs as root, and where their directories go then
   * (`machinesDir`, in `dataDir`, becomes a link there). Unused when not root: agents run as the controller.
   */
  agents: {
    user: string;
    dir: string;
    dataDir: string;
    /** Run them as the controller's user even as root (ControllerOptions.localAgentsAsRoot). */ asController: boolean;
  };
  /**
   * Whether this controller makes local machines (bootstrapped locally, or turned on): where not, one
   * that reached the store another way (an imported model) gets no agent, and says why.
   */
  enabled: boolean;
  /**
   * How often agents are checked for liveness, in milliseconds.
   * @default 5000
   */
  superviseIntervalMs?: number;
}

export class LocalProvisioner extends Reconciler {
  readonly name = "local-provisioner";
  /** Set by the first reconcile, once the agents' user and directories are ready. */
  private machines?: LocalMachines;
  private runAs?: AgentIdentity;
  /** The agent script as agents can read it (see readableAgentEntry). */
  private agentEntry?: string;
  /** Machines adopted by migration, by the directory they run under. */
  private readonly adopted = new Map<string, LocalMachines>();
  /** Machines already told they get no agent here. */
  private readonly refused = new Set<string>();

  constructor(private readonly o: LocalProvisionerOptions) {
    super({
      cache: o.cache,
      log: o.log,
      failure: "local substrate reconcile failed",
      pollMs: o.superviseIntervalMs ?? 5000,
    });
  }

  /** Only machine changes matter; status chatter leaves it unchanged. */
  protected override signature(): string {
    const parts: string[] = [];
    for (const idx of this.o.cache.models.values())
      for (const m of idx.machines.values())
        if (onControllerHost(m.substrate))
          parts.push(`${idx.uuid}/${m.id}/${m.life}${holdsStorage(idx, m.id) ? "/storage" : ""}`);
    return parts.sort().join(",");
  }

  /** Makes the agents' user and directories ready (once; again after a failure). */
  private async ready(): Promise<LocalMachines> {
    if (this.machines) return this.machines;
    const runAs = this.o.agents.asController ? undefined : await localAgentIdentity(this.o.agents.user);
    let agentEntry = this.o.agentEntry;
    if (runAs) {
      await placeAgentsDir(this.o.agents.dataDir, this.o.agents.dir);
      agentEntry = await readableAgentEntry(this.o.agents.dataDir, this.o.agents.dir, agentEntry, runAs);
    }
    this.runAs = runAs;
    this.agentEntry = agentEntry;
    return (this.machines = new LocalMachines({
      machinesDir: this.o.machinesDir,
      agentEntry,
      ...(runAs ? { runAs } : {}),
    }));
  }

  protected async reconcile(): Promise<void> {
    // Made ready on the first local machine: a controller without any makes no user nor directory.
    let own: LocalMachines | undefined;
    for (const idx of [...this.o.cache.models.values()]) {
      // A model that moved to another controller: its agents are that controller's to keep.
      if (handedOver(this.o.cache.migrations.get(idx.uuid))) continue;
      for (const m of [...idx.machines.values()]) {
        if (!onControllerHost(m.substrate) || this.stopped) continue;
        if (!this.o.enabled && m.life === "alive") {
          await this.refuse(idx.uuid, m.id);
          continue;
        }
        const machines = this.machinesOf(m, (own ??= await this.ready()));
        if (m.life === "alive") await this.ensureRunning(machines, idx.uuid, m.id);
        // Its storage is moved off first (storage-volumes.ts): removing its directory would take it along.
        else if (holdsStorage(idx, m.id)) continue;
        else {
          await this.destroy(machines, idx.uuid, m.id);
          await this.o.ops.machines.finish(idx.uuid, m.id);
        }
      }
    }
  }

  /**
   * Where the machine's agent runs: under this controller's directory, or, for a machine that came
   * by migration from another local controller, where that one started it (the agent never moved).
   */
  private machinesOf(m: MachineDoc, own: LocalMachines): LocalMachines {
    if (!m.localDir) return own;
    const root = dirname(dirname(m.localDir));
    let machines = this.adopted.get(root);
    if (!machines)
      this.adopted.set(
        root,
        (machines = new LocalMachines({
          machinesDir: root,
          agentEntry: this.agentEntry ?? this.o.agentEntry,
          ...(this.runAs ? { runAs: this.runAs } : {}),
        })),
      );
    return machines;
  }

  private async refuse(model: string, machine: string): Promise<void> {
    if (this.refused.has(`${model}/${machine}`)) return;
    const why =
      'not started: this controller was not bootstrapped locally and makes no local machines ("localMachines": {"enabled": true} in its controller.json turns them on)';
    this.o.log.warn("a local machine gets no agent", { model, machine, why });
    await this.o.ops.machines.setInstall(model, machine, { state: "failed", step: why });
    this.refused.add(`${model}/${machine}`);
  }

  private async ensureRunning(machines: LocalMachines, model: string, machine: string): Promise<void> {
    const started = await machines.startMachine({
      model,
      machine,
      placement: undefined,
      controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert },
      issueCredential: () => this.o.ops.machines.issueCredential(model, machine),
    });
    if (started.changed) this.o.log.info("started local agent", { model, machine, instance: started.instanceId });
  }

  private async destroy(machines: LocalMachines, model: string, machine: string): Promise<void> {
    await machines.stopMachine({ model, machine, placement: undefined });
    this.o.log.info("removed local machine", { model, machine });
  }
}
