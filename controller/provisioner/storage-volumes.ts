/**
 * The storage provisioner (issue 32; Juju's storage provisioner): for every storage instance whose
 * record says work is due (storage-docs.ts `pendingVolumeWork`), the model's substrate kind's volume
 * broker makes and attaches it, moves it off a machine its unit left (kept, never deleted), or
 * destroys it when asked; each report is written back checked against the record it acted on. A
 * machine that still holds storage waits for its detach before it goes (local-machines.ts asks
 * {@link holdsStorage}).
 */
import type { Logger, ModelSubstrate } from "../../api";
import { DEFAULT_SUBSTRATE } from "../../api";
import type { MachineStorageFacts, VolumeBroker, VolumeDeps, VolumeSpec } from "../../substrates";
import { VolumeNotReady, substrateKind } from "../../substrates";
import type { CredentialOps, ModelIndex, StateCache, StateOps, StorageDoc } from "../state";
import { handedOver, pendingVolumeWork, resolvePool } from "../state";
import { Reconciler } from "../workers";

export interface StorageProvisionerOptions {
  cache: StateCache;
  ops: StateOps;
  log: Logger;
  /** What brokers are given; the models' placements are added here (from the cache and `credentials`). */
  deps: VolumeDeps;
  /** Opens the models' credentials, for the brokers of clouds (absent: their placements cannot be had). */
  credentials?: CredentialOps;
  /**
   * How often due work is tried again (an attach waits for its machine's agent to start), in ms.
   * @default 2000
   */
  pollMs?: number;
}

/** Whether machine `machine` of the model still holds a storage instance (it must not go before it is moved off). */
export function holdsStorage(idx: ModelIndex, machine: string): boolean {
  for (const s of idx.storage.values()) if (s.machine === machine) return true;
  return false;
}

/**
 * Where the operator wants instance `s` (operator.yaml `location`): that path when a unit has at most
 * one instance of the store, else a directory per instance under it (`/srv/data/data-3`).
 */
function declaredLocation(cache: StateCache, idx: ModelIndex, s: StorageDoc): string | undefined {
  const app = idx.apps.get(s.app);
  const spec = app && cache.operators.get(app.operator.hash)?.meta.storage?.[s.name];
  if (spec?.location === undefined) return undefined;
  return spec.count.max <= 1 ? spec.location : `${spec.location.replace(/\/+$/, "")}/${s.id.replace("/", "-")}`;
}

/** A machine's declared storage devices and the machine-bound instances on it, as the cache has them. */
function machineStorageFacts(cache: StateCache, model: string, machine: string): MachineStorageFacts {
  const idx = cache.models.get(model);
  const held: MachineStorageFacts["held"] = [];
  for (const s of idx?.storage.values() ?? [])
    if (s.boundTo === machine) held.push({ id: s.id, pool: s.pool, ...(s.handle ? { handle: s.handle } : {}) });
  return { devices: idx?.machines.get(machine)?.storageDevices ?? [], held };
}

export class StorageProvisioner extends Reconciler {
  readonly name = "storage-provisioner";
  /** Brokers by substrate kind, made on first use. */
  private readonly brokers = new Map<string, VolumeBroker | undefined>();
  /** Work that failed, by instance, with what was said: told once, not every pass. */
  private readonly told = new Map<string, string>();

  private readonly deps: VolumeDeps;

  constructor(private readonly o: StorageProvisionerOptions) {
    super({ cache: o.cache, log: o.log, failure: "storage provisioner pass failed", pollMs: o.pollMs ?? 2000 });
    this.deps = {
      ...o.deps,
      placement: (model) => this.placementOf(model),
      machineStorage: (model, machine) => machineStorageFacts(this.o.cache, model, machine),
    };
  }

  /** A model's placement as its kind makes it: its settings and its credential, opened. */
  private async placementOf(model: string): Promise<unknown> {
    const doc = this.o.cache.models.get(model)?.model;
    if (!doc) throw new Error(`model ${model} is gone`);
    const { substrate, credential, settings } = doc.placement;
    const kind = substrateKind(substrate);
    if (!kind.placement) throw new Error(`${substrate} models have no placement`);
    if (!credential || !this.o.credentials) throw new Error(`model ${doc.name} has no ${substrate} credential`);
    return kind.placement(
      { settings, controllerUuid: this.o.cache.controller?.uuid ?? "" },
      await this.o.credentials.open(credential, substrate as never),
    );
  }

  override async run(signal: AbortSignal): Promise<void> {
    try {
      await super.run(signal);
    } finally {
      for (const b of this.brokers.values()) b?.close?.();
    }
  }

  /** Only storage records (and the machines they wait for) matter. */
  protected override signature(): string {
    const parts: string[] = [];
    for (const idx of this.o.cache.models.values())
      for (const s of idx.storage.values()) {
        // A cloud machine's instance coming up is what an attach waiting for it waits for.
        const instance = s.machine !== undefined ? idx.machineInstall.get(s.machine)?.instance?.state : undefined;
        parts.push(`${idx.uuid}/${s.id}/${pendingVolumeWork(s) ?? ""}/${s.machine ?? ""}/${instance ?? ""}`);
      }
    return parts.sort().join(",");
  }

  protected async reconcile(): Promise<void> {
    for (const idx of [...this.o.cache.models.values()]) {
      // A model that moved to another controller: its volumes are that controller's to keep.
      if (handedOver(this.o.cache.migrations.get(idx.uuid))) continue;
      const substrate = idx.model?.placement.substrate;
      for (const s of [...idx.storage.values()]) {
        if (this.stopped) return;
        const work = pendingVolumeWork(s);
        if (!work) continue;
        const broker = this.brokerOf(substrate);
        if (!broker) continue;
        await this.act(broker, idx, s, work).catch((err: unknown) => this.tell(idx.uuid, s, work, err));
      }
    }
  }

  private brokerOf(substrate: ModelSubstrate | undefined): VolumeBroker | undefined {
    const name = substrate ?? DEFAULT_SUBSTRATE;
    if (!this.brokers.has(name)) this.brokers.set(name, substrateKind(name).volumes?.(this.deps));
    return this.brokers.get(name);
  }

  private async act(broker: VolumeBroker, idx: ModelIndex, s: StorageDoc, work: "attach" | "detach" | "destroy") {
    const model = idx.uuid;
    const location = declaredLocation(this.o.cache, idx, s);
    const substrate = idx.model?.placement.substrate ?? DEFAULT_SUBSTRATE;
    // A made pool cannot be removed while an instance names it; a model's pools travel with it.
    const pool = resolvePool(substrate, s.pool, idx.storagePools.get(s.pool));
    if (!pool) throw new Error(`its pool "${s.pool}" is not one of the model's pools`);
    const v: VolumeSpec = {
      model,
      id: s.id,
      kind: s.kind,
      pool: s.pool,
      poolType: pool.type.name,
      attributes: pool.attributes,
      size: s.size,
      ...(s.handle ? { handle: s.handle } : {}),
      ...(location !== undefined ? { location } : {}),
      ...(s.unit ? { unit: s.unit } : {}),
    };
    if (work === "attach") {
      const done = await broker.attach(v, { model, machine: s.machine! });
      const { revision } = await this.o.ops.storage.attached(model, s.id, s.machine!, done);
      // The next attach on the machine must see this one's handle (a declared device it took).
      await this.o.cache.waitForRevision(revision);
      this.o.log.info("location" in done ? "attached storage" : "attached storage; its machine's agent does the rest", {
        model,
        storage: s.id,
        unit: s.unit,
        ...("location" in done ? { location: done.location } : {}),
      });
    } else if (work === "detach") {
      const handle = await broker.detach(v, { model, machine: s.machine! });
      await this.o.ops.storage.detached(model, s.id, s.machine!, handle);
      this.o.log.info("detached storage, kept", { model, storage: s.id, machine: s.machine });
    } else {
      // Detached first (pendingVolumeWork): only what is off every machine is destroyed.
      await broker.destroy(v);
      await this.o.ops.storage.destroyed(model, s.id);
      this.o.log.info("destroyed storage", { model, storage: s.id });
    }
    this.told.delete(`${model}/${s.id}`);
  }

  /** Said once per new failure, in the log and on the instance (`steward storage` shows it). */
  private async tell(model: string, s: StorageDoc, work: string, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    const key = `${model}/${s.id}`;
    // Waiting for its machine is no error.
    if (err instanceof VolumeNotReady) return;
    const text = `could not ${work}: ${message}; retrying`;
    if (this.told.get(key) === message && s.message === text) return;
    if (this.told.get(key) !== message)
      this.o.log.warn(`could not ${work} storage; will retry`, { model, storage: s.id, err: message });
    this.told.set(key, message);
    await this.o.ops.storage
      .failed(model, s.id, work, text)
      .catch((e: unknown) => this.o.log.warn("could not record a storage failure", { storage: s.id, err: String(e) }));
  }
}
