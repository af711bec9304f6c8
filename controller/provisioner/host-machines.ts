/**
 * Provisioning for machines that are processes on the controller's own host (the kinds whose
 * contract says `onControllerHost`): the leader keeps one agent process running for each live
 * machine, through its kind's machine broker (substrates/<kind>/ `machines()`, which knows where
 * and as whom it runs), starting one again when it is found dead, and removes the process of a
 * machine that is dying before the machine's record goes.
 */
import type { Logger, ModelSubstrate } from "../../api";
import { contractOf } from "../../api";
import type { MachineHost, MachinesOfKind } from "../../substrates";
import { substrateKind } from "../../substrates";
import type { MachineDoc, StateCache, StateOps } from "../state";
import { handedOver } from "../state";
import { Reconciler } from "../workers";

/** Machines this provisioner keeps: those of the kinds whose machines are processes on the controller's host. */
const onControllerHost = (substrate: ModelSubstrate): boolean => !!contractOf(substrate).onControllerHost;

export interface HostMachineProvisionerOptions {
  /** Where the processes go, and as whom they run (handed to each kind's broker). */
  host: MachineHost;
  caCert: string;
  controllerAddresses: () => string[];
  cache: StateCache;
  ops: StateOps;
  log: Logger;
  /**
   * Whether this controller makes such machines (bootstrapped on its host, or turned on): where not, one
   * that reached the store another way (an imported model) gets no agent, and says why.
   */
  enabled: boolean;
  /**
   * How often agents are checked for liveness, in milliseconds.
   * @default 5000
   */
  superviseIntervalMs?: number;
}

export class HostMachineProvisioner extends Reconciler {
  readonly name = "local-provisioner";
  /** Each kind's broker, made on its first machine (a controller without any makes no user nor directory). */
  private readonly brokers = new Map<ModelSubstrate, MachinesOfKind<unknown>>();
  /** Machines already told they get no agent here. */
  private readonly refused = new Set<string>();

  constructor(private readonly o: HostMachineProvisionerOptions) {
    super({
      cache: o.cache,
      log: o.log,
      failure: "local substrate reconcile failed",
      pollMs: o.superviseIntervalMs ?? 5000,
    });
  }

  override async run(signal: AbortSignal): Promise<void> {
    try {
      await super.run(signal);
    } finally {
      for (const b of this.brokers.values()) b.close();
    }
  }

  /** Only machine changes matter; status chatter leaves it unchanged. */
  protected override signature(): string {
    const parts: string[] = [];
    for (const idx of this.o.cache.models.values())
      for (const m of idx.machines.values())
        if (onControllerHost(m.substrate)) parts.push(`${idx.uuid}/${m.id}/${m.life}`);
    return parts.sort().join(",");
  }

  private brokerOf(substrate: ModelSubstrate): MachinesOfKind<unknown> {
    let broker = this.brokers.get(substrate);
    if (!broker) this.brokers.set(substrate, (broker = substrateKind(substrate).machines!(this.o.host)));
    return broker;
  }

  protected async reconcile(): Promise<void> {
    for (const idx of [...this.o.cache.models.values()]) {
      // A model that moved to another controller: its agents are that controller's to keep.
      if (handedOver(this.o.cache.migrations.get(idx.uuid))) continue;
      for (const m of [...idx.machines.values()]) {
        if (!onControllerHost(m.substrate) || this.stopped) continue;
        if (!this.o.enabled && m.life === "alive") {
          await this.refuse(idx.uuid, m.id);
          continue;
        }
        const broker = this.brokerOf(m.substrate);
        if (m.life === "alive") await this.ensureRunning(broker, idx.uuid, m);
        else {
          await broker.stopMachine({ model: idx.uuid, machine: m.id, placement: placementOf(m) });
          this.o.log.info("removed local machine", { model: idx.uuid, machine: m.id });
          await this.o.ops.machines.finish(idx.uuid, m.id);
        }
      }
    }
  }

  private async refuse(model: string, machine: string): Promise<void> {
    if (this.refused.has(`${model}/${machine}`)) return;
    const why =
      'not started: this controller was not bootstrapped locally and makes no local machines ("localMachines": {"enabled": true} in its controller.json turns them on)';
    this.o.log.warn("a local machine gets no agent", { model, machine, why });
    await this.o.ops.machines.setInstall(model, machine, { state: "failed", step: why });
    this.refused.add(`${model}/${machine}`);
  }

  private async ensureRunning(broker: MachinesOfKind<unknown>, model: string, m: MachineDoc): Promise<void> {
    const started = await broker.startMachine({
      model,
      machine: m.id,
      placement: placementOf(m),
      controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert },
      issueCredential: () => this.o.ops.machines.issueCredential(model, m.id),
    });
    if (started.changed) this.o.log.info("started local agent", { model, machine: m.id, instance: started.instanceId });
  }
}

/** Where the machine's agent runs: where another controller on this host started it, for one that came by migration. */
const placementOf = (m: MachineDoc): { dir?: string } => (m.localDir ? { dir: m.localDir } : {});
