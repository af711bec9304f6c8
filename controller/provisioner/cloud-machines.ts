/**
 * Provisioning for cloud models (the kinds whose contract says `instances`): the leader makes each
 * live machine an instance (clouds.ts), records the instance's id, zone and state in the machine's
 * status as the cloud reports it, terminates the instance of a machine that is removed, and
 * terminates instances it finds tagged for machines that no longer exist (a forced removal deletes
 * machines without waiting).
 *
 * An instance that disappears while its machine lives (terminated by hand) is reported, not
 * replaced: as in Juju, the machine shows down and the operator decides. One the cloud no longer
 * lists at all is recorded in state `gone`.
 *
 * A launch outlives the pass that began it (an instance boots for minutes) but not the worker: the
 * worker's signal reaches the broker's calls and the wait for the agent, and stopping waits for every
 * launch to end. An interrupted launch records nothing more: its machine stays `installing`, and the
 * next leader's pass resumes it (the broker finds the instance by its tags, or launches it if none was made).
 */
import type { Logger } from "../../api";
import { StewardError } from "../../api";
import type { MachineHost } from "../../substrates";
import type {
  CredentialOps,
  EnrolmentOps,
  InstanceRecord,
  MachineInstallDoc,
  ModelIndex,
  StateCache,
  StateOps,
} from "../state";
import { decode, docs, handedOver, keys, put } from "../state";
import type { Store } from "../store";
import { unchanged } from "../store";
import { Reconciler } from "../workers";
import type { Cloud, CloudInstance } from "./clouds";
import { clouds } from "./clouds";
import { holdsStorage } from "./storage-volumes";
import { waitForAgentLogin } from "./wait-for-login";

export interface CloudProvisionerOptions {
  cache: StateCache;
  /** Fenced: writes stop once this replica is no longer leader. */
  ops: StateOps;
  /** The leader's (fenced) store: where a migrated model's arrival is recorded. */
  store: Store;
  enrolments: EnrolmentOps;
  credentials: CredentialOps;
  /** Handed to each kind's machine broker (unused by clouds). */
  host: MachineHost;
  caCert: string;
  controllerAddresses: () => string[];
  log: Logger;
  /**
   * How often instances are listed to record their state, in ms.
   * @default 10000
   */
  pollIntervalMs?: number;
  /**
   * How long a new instance may take to boot and enrol its agent.
   * @default 900000
   */
  loginTimeoutMs?: number;
}

export class CloudProvisioner extends Reconciler {
  readonly name = "cloud-provisioner";
  private readonly clouds: ReturnType<typeof clouds>;
  /** Launches in flight, by `<model>/<machine>`: what a stop waits for. */
  private readonly launching = new Map<string, Promise<void>>();
  /** The provisioning record this worker last wrote of each machine (`<model>/<machine>`). */
  private readonly written = new Map<string, Omit<MachineInstallDoc, "at">>();
  /** Launches this worker saw to their end: the cache may not show their outcome yet, and they are not resumed. */
  private readonly launched = new Set<string>();
  /** Placements of models seen, to clean up after a model removed by force. */
  private readonly seen = new Map<string, { cloud: Cloud; placement: unknown }>();
  /** Models whose arrival by migration was looked at (and their instances taken over, if it was one). */
  private readonly adopted = new Set<string>();
  private sweptAt = 0;

  constructor(private readonly o: CloudProvisionerOptions) {
    super({ cache: o.cache, log: o.log, failure: "cloud provisioning failed", pollMs: o.pollIntervalMs ?? 10_000 });
    this.clouds = clouds(o.credentials, o.host);
  }

  /** After the last pass and the last launch (both aborted by the signal), the clouds' connections close. */
  override async run(signal: AbortSignal): Promise<void> {
    try {
      await super.run(signal);
      while (this.launching.size > 0) await Promise.all([...this.launching.values()]);
    } finally {
      for (const c of Object.values(this.clouds)) c.close();
    }
  }

  private cloudModels(): ModelIndex[] {
    // A model that moved to another controller (between SUCCESS and REAP): its instances are that one's.
    return [...this.o.cache.models.values()].filter(
      (idx) =>
        idx.model !== undefined &&
        this.clouds[idx.model.placement.substrate] !== undefined &&
        !handedOver(this.o.cache.migrations.get(idx.uuid)),
    );
  }

  protected override signature(): string {
    const parts: string[] = [];
    for (const idx of this.cloudModels())
      for (const m of idx.machines.values())
        parts.push(`${idx.uuid}/${m.id}/${m.life}${holdsStorage(idx, m.id) ? "/storage" : ""}`);
    return parts.sort().join(",");
  }

  protected async reconcile(signal: AbortSignal): Promise<void> {
    if (Date.now() - this.sweptAt > 60_000) {
      this.sweptAt = Date.now();
      await this.o.enrolments
        .sweepExpired()
        .catch((err: unknown) => this.o.log.warn("could not delete expired enrolment tokens", { err }));
    }
    const live = new Set<string>();
    for (const idx of this.cloudModels()) {
      if (this.stopped) return;
      live.add(idx.uuid);
      await this.reconcileModel(idx, signal).catch((err: unknown) =>
        this.o.log.warn("cloud model reconcile failed", { model: idx.model?.name, err: (err as Error).message }),
      );
    }
    // Models removed by force took their machines' records at once: their instances go now. A
    // model that migrated away is no longer here either, but its instances are the target's.
    for (const [uuid, { cloud, placement }] of this.seen) {
      if (live.has(uuid) || this.stopped) continue;
      // (Should it come back, it is taken over again: its instances were re-tagged as the other's.)
      if (handedOver(this.o.cache.migrations.get(uuid))) {
        this.seen.delete(uuid);
        this.adopted.delete(uuid);
        continue;
      }
      const left = (await cloud.instances(placement, uuid).catch(() => undefined))?.filter((i) => !cloud.gone(i.state));
      if (!left) continue;
      for (const i of left)
        if (i.machine)
          await cloud.broker
            .stopMachine({ model: uuid, machine: i.machine, placement }, { signal })
            .catch(() => undefined);
      this.o.log.info("terminated the instances of a removed model", {
        model: uuid,
        instances: left.map((i) => i.id).join(","),
      });
      this.seen.delete(uuid);
    }
  }

  private async reconcileModel(idx: ModelIndex, signal: AbortSignal): Promise<void> {
    const cloud = this.clouds[idx.model!.placement.substrate]!;
    const placement = await cloud.placementOf(idx.model!, this.o.cache.controller?.uuid ?? "");
    await this.adoptIfArrived(idx, cloud, placement);
    this.seen.set(idx.uuid, { cloud, placement });
    const newest = new Map<string, CloudInstance>();
    const instances = await cloud.instances(placement, idx.uuid);
    for (const i of instances) if (i.machine !== undefined && !newest.has(i.machine)) newest.set(i.machine, i);
    for (const m of [...idx.machines.values()]) {
      if (this.stopped) return;
      const inst = newest.get(m.id);
      const install = idx.machineInstall.get(m.id);
      if (m.life !== "alive") {
        // Its storage comes off first (storage-volumes.ts): a destroyed VM takes its disks along.
        if (holdsStorage(idx, m.id)) continue;
        if (inst && !cloud.gone(inst.state))
          await cloud.broker.stopMachine({ model: idx.uuid, machine: m.id, placement }, { signal });
        if (signal.aborted) return;
        await this.o.ops.machines.finish(idx.uuid, m.id);
        this.written.delete(`${idx.uuid}/${m.id}`);
        this.o.log.info("removed cloud machine", { model: idx.model?.name, machine: m.id, instance: inst?.id });
        continue;
      }
      if (inst && !sameInstance(install?.instance, inst))
        await this.record(idx.uuid, m.id, { instance: recordOf(inst) });
      // Seen before, not listed now: destroyed by hand (a vSphere VM), or terminated long ago (EC2 forgets them after an hour).
      if (!inst && install?.instance && install.instance.state !== "gone")
        await this.record(idx.uuid, m.id, { instance: { ...install.instance, state: "gone" } });
      const key = `${idx.uuid}/${m.id}`;
      // Launched once: a machine whose instance failed or vanished is reported, not relaunched. One
      // left "installing" was interrupted (a leader change): before the cloud was asked (no instance
      // then: launched now), or while its instance booted (its agent is awaited again).
      const interrupted = install?.state === "installing" && (inst !== undefined || !install.instance);
      if (((!inst && !install) || interrupted) && !this.launching.has(key) && !this.launched.has(key))
        this.launch(idx, m.id, cloud, placement, key, signal, inst);
    }
    // Instances of machines that no longer exist (removed by force).
    for (const i of instances) {
      if (signal.aborted) return;
      if (i.machine !== undefined && !idx.machines.has(i.machine) && !cloud.gone(i.state)) {
        await cloud.broker.stopMachine({ model: idx.uuid, machine: i.machine, placement }, { signal });
        this.o.log.info("terminated an instance whose machine is gone", {
          model: idx.model?.name,
          machine: i.machine,
          instance: i.id,
        });
      }
    }
  }

  /**
   * A model that came by migration: its instances are still tagged as the source controller's
   * until they are taken over, before anything here lists them (it would find none and call them gone).
   */
  private async adoptIfArrived(idx: ModelIndex, cloud: Cloud, placement: unknown): Promise<void> {
    if (this.adopted.has(idx.uuid)) return;
    const kv = await this.o.store.get(keys.migrationArrival(idx.uuid));
    const arrival = kv ? decode(docs.migrationArrival, kv.value) : undefined;
    if (kv && arrival && !arrival.adoptedAt) {
      if (!cloud.adopt)
        throw new StewardError(
          "invalid-request",
          `model ${idx.model?.name} came by migration, but its cloud's instances cannot be taken over`,
        );
      const n = await cloud.adopt(placement, idx.uuid, arrival.source);
      await this.o.store.txn({
        compare: [unchanged(kv.key, kv.modRevision)],
        success: [put(docs.migrationArrival, idx.uuid, { ...arrival, adoptedAt: new Date().toISOString() })],
      });
      this.o.log.info("took over the instances of a model that migrated here", {
        model: idx.model?.name,
        instances: n,
        from: arrival.source,
      });
    }
    this.adopted.add(idx.uuid);
  }

  /** Launches the machine's instance (or, `resumed`, awaits the agent of the one it has), in the background. */
  private launch(
    idx: ModelIndex,
    machine: string,
    cloud: Cloud,
    placement: unknown,
    key: string,
    signal: AbortSignal,
    resumed?: CloudInstance,
  ): void {
    const { uuid } = idx;
    const doc = idx.machines.get(machine);
    const log = this.o.log.child({ model: idx.model?.name, machine });
    // The last progress record: the outcome's must land after it.
    let recorded = Promise.resolve();
    const p = (async () => {
      await this.record(uuid, machine, {
        state: "installing",
        step: resumed ? `instance ${resumed.id} is ${resumed.state}; waiting for its agent` : "launching an instance",
      });
      try {
        const res = await cloud.broker.startMachine(
          {
            model: uuid,
            machine,
            placement,
            controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert },
            issueCredential: () => this.o.ops.machines.issueCredential(uuid, machine),
            issueEnrolment: () => this.o.enrolments.issue(uuid, machine),
            ...(doc?.constraints ? { constraints: doc.constraints } : {}),
            ...storageHandlesOf(idx, machine),
            waitForLogin: () =>
              waitForAgentLogin(this.o.cache, uuid, machine, {
                timeoutMs: this.o.loginTimeoutMs ?? 900_000,
                hint: `the instance booted but its agent did not enrol; see /var/lib/steward/enrol-${uuid}-${machine}.log on it (can it reach ${this.o.controllerAddresses().join(", ")}?)`,
                abandoned: () =>
                  this.o.cache.models.get(uuid)?.machines.get(machine)?.life !== "alive"
                    ? "the machine is being removed"
                    : undefined,
                signal,
              }),
          },
          {
            progress: (step) => {
              if (signal.aborted) return;
              log.info("provisioning", { step });
              recorded = this.record(uuid, machine, { state: "installing", step });
            },
            signal,
          },
        );
        await recorded;
        this.launched.add(key);
        await this.record(uuid, machine, {
          state: "installed",
          step: res.changed ? "instance launched; agent enrolled" : "agent enrolled",
          changed: res.changed,
          ...(res.hardware ? { hardware: res.hardware } : {}),
        });
        log.info("cloud machine up", { instance: res.instanceId });
      } catch (err) {
        await recorded;
        // Stopped (deposed, or the replica stopping): left "installing" for the next leader to resume.
        if (signal.aborted) {
          log.info("cloud machine provisioning interrupted; the next leader resumes it");
          return;
        }
        const message = StewardError.isInstance(err)
          ? err.message
          : `${(err as Error).name}: ${(err as Error).message}`;
        log.error("cloud machine provisioning failed", { err: message });
        this.launched.add(key);
        await this.record(uuid, machine, { state: "failed", step: message });
      }
    })().finally(() => this.launching.delete(key));
    this.launching.set(key, p);
  }

  /**
   * Updates the machine's provisioning record, keeping what `change` does not say: of what this worker
   * last wrote (the cache may not show it yet: a pass recording the instance would otherwise put back
   * the step a launch had just moved on from), else of what the cache holds.
   */
  private async record(uuid: string, machine: string, change: Partial<Omit<MachineInstallDoc, "at">>): Promise<void> {
    const key = `${uuid}/${machine}`;
    const current = this.o.cache.models.get(uuid)?.machineInstall.get(machine);
    const { at: _, ...cached } = current ?? { state: "installing" as const, step: "", at: "" };
    const next = { ...(this.written.get(key) ?? cached), ...change };
    this.written.set(key, next);
    await this.o.ops.machines
      .setInstall(uuid, machine, next)
      .catch((err: unknown) => this.o.log.warn("could not record provisioning progress", { machine, err }));
  }
}

/** The handles of the storage made before the machine that is to be attached to it (kept storage given to its unit). */
function storageHandlesOf(idx: ModelIndex, machine: string): { storageHandles?: Record<string, string>[] } {
  const handles: Record<string, string>[] = [];
  for (const s of idx.storage.values()) if (s.machine === machine && s.handle) handles.push(s.handle);
  return handles.length > 0 ? { storageHandles: handles } : {};
}

function recordOf(i: CloudInstance): InstanceRecord {
  return {
    id: i.id,
    state: i.state,
    ...(i.zone ? { zone: i.zone } : {}),
    ...(i.address ? { address: i.address } : {}),
  };
}

function sameInstance(a: InstanceRecord | undefined, b: CloudInstance): boolean {
  return !!a && a.id === b.id && a.state === b.state && a.zone === b.zone && a.address === b.address;
}
