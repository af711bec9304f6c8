/**
 * Provisioning for models whose units are pods (the kinds whose contract says `provisions: "pods"`:
 * Kubernetes): the leader keeps, per model, its space on the substrate and, per application, its
 * unit pods, through the kind's pod broker (substrates/brokers.ts `ApplicationBroker`; Kubernetes:
 * a namespace, an agents Secret, Services and a StatefulSet, substrates/kubernetes/application-pods.ts).
 * Unit N is pod N; an application's pods number 1 + the highest unit number still in the model,
 * dying units included: a unit's pod goes only after its agent has run the teardown hooks and the
 * unit is removed, highest number first.
 *
 * The pod is the unit's machine: a machine made for a unit records its pod (name, phase, IP) as
 * its instance, and is finished as soon as its unit is gone (its pod goes with it).
 * An operator's workload containers are part of each pod (the broker places them), and so is each
 * unit's storage: a claim per instance, which the StatefulSet keeps when the unit goes.
 * Pods of applications and models that are gone are removed (a model's whole space only when it
 * was made for the model).
 *
 * A pass that fails (the cluster not reached, the credential refused, a call forbidden) is told
 * where users look, not only in the controller's log: each of the model's machines shows it as its
 * status ("cannot reach cluster https://…: connection refused; retrying") and a line goes to the
 * model's debug-log, once per new failure and once when the cluster answers again.
 *
 * Migration: the model's pods belong to the controller the model lives on. The source leaves them
 * alone from the moment it asks the target to activate the model (from then on the target may be
 * writing them) and for good once the model is handed over: a model that moved away is forgotten,
 * never swept. The target, on its first pass, rewrites each application's agent configurations to
 * name its own addresses and CA (see agentConfigsOf), so pods made after the move come up talking
 * to it. Nothing the broker makes names the controller, so nothing else changes hands.
 *
 * Every broker call carries the worker's signal: a deposed leader's pass ends at its call in
 * flight, and an aborted call is not told as a cluster failure. The broker writes each object
 * whole, so the next leader's pass converges from whatever the aborted one left.
 */
import type { AgentConfig, DebugLogRecord, Logger, LogRecordLevel, ModelSubstrate, StorageSpec } from "../../api";
import { StewardError, agentConfigText, contractOf, parseAgentConfig } from "../../api";
import type { ApplicationBroker, PodProbeSettings, PodStorage } from "../../substrates";
import { substrateKind } from "../../substrates";
import { credentialMatches } from "../security/credentials";
import type {
  CredentialOps,
  InstanceRecord,
  MachineInstallDoc,
  MigrationDoc,
  ModelIndex,
  StateCache,
  StateOps,
  StorageDirective,
} from "../state";
import { handedOver, migrationActive } from "../state";
import { unitNumber } from "../state/agent-views";
import { Reconciler } from "../workers";

export interface KubernetesProvisionerOptions {
  cache: StateCache;
  /** Fenced: writes stop once this replica is no longer leader. */
  ops: StateOps;
  credentials: CredentialOps;
  caCert: string;
  controllerAddresses: () => string[];
  /** The image of the agent container (`kubernetes.agentImage` in the controller's configuration). */
  agentImage: string;
  log: Logger;
  /**
   * How often pods are listed to record their state, in ms.
   * @default 5000
   */
  pollIntervalMs?: number;
  /** Probe settings of the agent container (tests shorten them). */
  probes?: PodProbeSettings;
  /** Adds records to a model's debug-log (this replica's; see server/model-logs.ts). */
  modelLog?: (model: string, records: DebugLogRecord[]) => void;
}

/** Where a model's pods are: its kind's broker and the placement opened from its settings and credential. */
interface PodPlace {
  broker: ApplicationBroker<unknown>;
  placement: unknown;
  /** What the placement was opened from: it is reused while this is unchanged. */
  key: string;
}

type UnitSlot = { ordinal: number; machine: string };

/** Models (and machines) this provisioner keeps: those of the kinds whose units are pods. */
const onPods = (substrate: ModelSubstrate | undefined): boolean => contractOf(substrate).provisions === "pods";

export class KubernetesProvisioner extends Reconciler {
  readonly name = "kubernetes-provisioner";
  /** Each pod kind's broker, made when a model of it is first seen. */
  private readonly brokers = new Map<ModelSubstrate, ApplicationBroker<unknown>>();
  /** Places by model uuid (kept to clean up after a model removed by force, and reused while its credential is unchanged). */
  private readonly places = new Map<string, PodPlace>();
  /** The failure each model's last pass ended with, while it lasts: told once, shown on its machines. */
  private readonly failures = new Map<string, string>();

  constructor(private readonly o: KubernetesProvisionerOptions) {
    super({ cache: o.cache, log: o.log, failure: "pod provisioning failed", pollMs: o.pollIntervalMs ?? 5000 });
  }

  /** After the last pass, the brokers' connections close. */
  override async run(signal: AbortSignal): Promise<void> {
    try {
      await super.run(signal);
    } finally {
      for (const b of this.brokers.values()) b.close();
    }
  }

  private models(): ModelIndex[] {
    return [...this.o.cache.models.values()].filter((idx) => onPods(idx.model?.placement.substrate));
  }

  /** Whether the model's pods are another controller's now, or may be being taken over by it (see the file's comment). */
  private leftToTarget(uuid: string): boolean {
    return leftToTarget(this.o.cache.migrations.get(uuid));
  }

  /** What decides the pods: units and machines with their life, applications. */
  protected override signature(): string {
    const parts: string[] = [];
    for (const idx of this.models()) {
      parts.push(`${idx.uuid}:${idx.model?.life}:${idx.model?.placement.credential}:${this.leftToTarget(idx.uuid)}`);
      // The operator decides the pod template (its workload containers): an upgrade is patched in.
      for (const a of idx.apps.values()) parts.push(`${idx.uuid}/app/${a.name}/${a.life}/${a.operator.hash}`);
      for (const u of idx.units.values()) parts.push(`${idx.uuid}/unit/${u.name}/${u.machine}/${u.life}`);
      for (const m of idx.machines.values()) parts.push(`${idx.uuid}/machine/${m.id}/${m.life}`);
    }
    return parts.sort().join(",");
  }

  protected async reconcile(signal: AbortSignal): Promise<void> {
    const live = new Set<string>();
    for (const idx of this.models()) {
      if (this.stopped) return;
      live.add(idx.uuid);
      if (this.leftToTarget(idx.uuid)) {
        this.forget(idx.uuid);
        continue;
      }
      try {
        await this.reconcileModel(idx, signal);
        this.answeredAgain(idx);
      } catch (err) {
        // Stopped mid-call: not the cluster's failure; the next leader's pass takes over.
        if (signal.aborted) return;
        await this.failed(idx, err);
      }
    }
    for (const uuid of this.failures.keys()) if (!live.has(uuid)) this.failures.delete(uuid);
    // Models removed (by force, or their last application gone and then the model): their pods go.
    for (const [uuid, place] of this.places) {
      if (live.has(uuid) || this.stopped) continue;
      // Gone from here because it moved: its pods are the target's.
      if (this.leftToTarget(uuid)) {
        this.forget(uuid);
        continue;
      }
      try {
        await this.removeModelPods(uuid, place, signal);
        this.places.delete(uuid);
        place.broker.release(place.placement);
      } catch (err) {
        this.o.log.warn("could not delete a removed pod model's objects", { model: uuid, err: describe(err) });
      }
    }
  }

  /** A pass failed: the controller's log and the model's debug-log say so once, each alive machine's status while it lasts. */
  private async failed(idx: ModelIndex, err: unknown): Promise<void> {
    const place = this.places.get(idx.uuid);
    const message = `${place ? place.broker.describeFailure(err, place.placement) : describe(err)}; retrying`;
    if (this.failures.get(idx.uuid) !== message) {
      this.failures.set(idx.uuid, message);
      this.o.log.warn("pod model reconcile failed", { model: idx.model?.name, err: message });
      this.tellModel(idx, "ERROR", `provisioning: ${message}`);
    }
    for (const m of [...idx.machines.values()]) {
      if (!onPods(m.substrate) || m.life !== "alive" || this.stopped) continue;
      const current = idx.machineInstall.get(m.id);
      if (current?.state === "failed" && current.step === message) continue;
      // The pod last seen stays recorded: the cluster may still run it.
      const doc: Omit<MachineInstallDoc, "at"> = {
        state: "failed",
        step: message,
        ...(current?.instance ? { instance: current.instance } : {}),
      };
      await this.o.ops.machines
        .setInstall(idx.uuid, m.id, doc)
        .catch((e: unknown) =>
          this.o.log.warn("could not record a provisioning failure", { machine: m.id, err: describe(e) }),
        );
    }
  }

  /** A pass went through after failing: said once (the machines' statuses are rewritten by recordPods). */
  private answeredAgain(idx: ModelIndex): void {
    if (!this.failures.delete(idx.uuid)) return;
    const place = this.places.get(idx.uuid);
    const server = place ? place.broker.where(place.placement).server : "";
    this.o.log.info("pod model provisioned again", { model: idx.model?.name, server });
    this.tellModel(idx, "INFO", `provisioning: cluster ${server} answers again`);
  }

  /** A line in the model's debug-log for each of its units (so `--include web/0` finds it), or one for the model when it has none. */
  private tellModel(idx: ModelIndex, level: LogRecordLevel, message: string): void {
    if (!this.o.modelLog) return;
    const ts = new Date().toISOString();
    const records: DebugLogRecord[] = [...idx.units.values()].map((u) => ({
      ts,
      level,
      source: "controller",
      machine: u.machine,
      unit: u.name,
      message,
    }));
    if (records.length === 0) records.push({ ts, level, source: "controller", machine: "", message });
    this.o.modelLog(idx.uuid, records);
  }

  /** Drops a model's connection without touching its pods. */
  private forget(uuid: string): void {
    const place = this.places.get(uuid);
    if (!place) return;
    this.places.delete(uuid);
    place.broker.release(place.placement);
    this.o.log.info("left a migrating model's pods to the target controller", {
      model: uuid,
      namespace: place.broker.where(place.placement).namespace,
    });
  }

  /** The kind's broker, made on first use. */
  private brokerOf(substrate: ModelSubstrate): ApplicationBroker<unknown> {
    let broker = this.brokers.get(substrate);
    if (!broker) {
      const kind = substrateKind(substrate);
      if (!kind.pods) throw new StewardError("internal", `the ${substrate} substrate has no pod broker`);
      broker = kind.pods({ agentImage: this.o.agentImage, ...(this.o.probes ? { probes: this.o.probes } : {}) });
      this.brokers.set(substrate, broker);
    }
    return broker;
  }

  private async placeOf(idx: ModelIndex): Promise<PodPlace> {
    const m = idx.model!;
    const { substrate, credential, settings } = m.placement;
    if (!credential) throw new StewardError("invalid-request", `model ${m.name} has no ${substrate} credential`);
    const attributes = await this.o.credentials.open(credential, substrate as never);
    const key = JSON.stringify([substrate, credential, attributes, settings]);
    const known = this.places.get(idx.uuid);
    if (known?.key === key) return known;
    if (known) known.broker.release(known.placement);
    const broker = this.brokerOf(substrate);
    const controllerUuid = this.o.cache.controller?.uuid ?? "";
    const place = {
      broker,
      placement: substrateKind(substrate).placement!({ settings, controllerUuid }, attributes),
      key,
    };
    this.places.set(idx.uuid, place);
    return place;
  }

  private async reconcileModel(idx: ModelIndex, signal: AbortSignal): Promise<void> {
    const place = await this.placeOf(idx);
    const { broker, placement } = place;
    const target = { model: idx.uuid, placement };
    if (await broker.ensureModel(target, { signal }))
      this.o.log.info("made the model's namespace", {
        model: idx.model?.name,
        namespace: broker.where(placement).namespace,
      });
    const byApp = new Map<string, UnitSlot[]>();
    for (const u of idx.units.values()) {
      const list = byApp.get(u.app) ?? [];
      list.push({ ordinal: unitNumber(u.name), machine: u.machine });
      byApp.set(u.app, list);
    }
    for (const app of new Set([...idx.apps.keys(), ...byApp.keys()])) {
      if (this.stopped) return;
      await this.reconcileApp(idx, place, app, byApp.get(app) ?? [], signal);
    }
    // Pods of applications that are gone.
    for (const app of await broker.applications(target, { signal }))
      if (!idx.apps.has(app) && !byApp.has(app)) {
        await broker.removeApplication(target, app, { signal });
        this.o.log.info("deleted a removed application's objects", {
          app,
          namespace: broker.where(placement).namespace,
        });
      }
    await this.recordPods(idx, place, signal);
    // A machine made for a unit is its pod: once the unit is gone, its pod goes with it.
    for (const m of [...idx.machines.values()]) {
      if (!onPods(m.substrate) || m.life === "alive" || this.stopped) continue;
      await this.o.ops.machines.finish(idx.uuid, m.id);
      this.o.log.info("removed a unit's pod machine", { model: idx.model?.name, machine: m.id, unit: m.createdFor });
    }
  }

  private async reconcileApp(
    idx: ModelIndex,
    { broker, placement }: PodPlace,
    app: string,
    units: UnitSlot[],
    signal: AbortSignal,
  ): Promise<void> {
    const replicas = units.length === 0 ? 0 : Math.max(...units.map((u) => u.ordinal)) + 1;
    const meta = this.o.cache.operators.get(idx.apps.get(app)?.operator.hash ?? "")?.meta;
    const containers = meta?.containers;
    const storage = podStorageOf(idx, idx.apps.get(app)?.storage, meta?.storage);
    const done = await broker.ensureApplication(
      {
        model: idx.uuid,
        placement,
        app,
        replicas,
        ...(containers ? { containers } : {}),
        ...(storage.length ? { storage } : {}),
        agentConfigs: (held) => this.agentConfigsOf(idx, app, units, held),
      },
      { signal },
    );
    const model = idx.model?.name;
    if (done.change === "made") this.o.log.info("made the application's StatefulSet", { model, app, replicas });
    else if (done.change === "template")
      this.o.log.info("updated the application's pod template", { model, app, replicas });
    else if (done.change === "scaled")
      this.o.log.info("scaled the application's StatefulSet", { model, app, from: done.from, to: replicas });
  }

  /**
   * One agent configuration per unit, from those the broker holds (`held`, by unit number). A unit
   * whose entry names its machine keeps it (its credential is still good); a new one (or a number
   * reused by a new unit) gets a new credential, which ends the machine's old one.
   *
   * An entry written by another controller (its CA: the model migrated here) is rewritten with
   * this controller's addresses and CA, KEEPING its credential once it matches the hash this
   * controller holds for the machine (imported with it). Why keep rather than issue new ones:
   * at SUCCESS every running agent switched here with the credential it has, and a pod agent reads
   * its mounted configuration only when it starts, so a new credential would lock out each running
   * agent until its pod restarts; the plaintext is in the pods' Secret anyway, which the controller
   * that holds the model's cluster credential can read. An entry whose credential does not match
   * gets a new one, as a new unit does.
   */
  private async agentConfigsOf(
    idx: ModelIndex,
    app: string,
    units: UnitSlot[],
    held: ReadonlyMap<number, string>,
  ): Promise<Map<number, string>> {
    const configs = new Map<number, string>();
    const addresses = this.o.controllerAddresses();
    let readdressed = 0;
    for (const u of units.sort((a, b) => a.ordinal - b.ordinal)) {
      const text = held.get(u.ordinal);
      const cfg = text ? configOf(text) : undefined;
      if (text && cfg?.machine === u.machine && cfg.model === idx.uuid) {
        // This controller's own entry stays as written: its agent learns newer addresses from the controller itself.
        if (cfg.caCert === this.o.caCert) {
          configs.set(u.ordinal, text);
          continue;
        }
        const hash = idx.machines.get(u.machine)?.credentialHash;
        if (hash && credentialMatches(cfg.credential, hash)) {
          configs.set(u.ordinal, agentConfigText({ ...cfg, controllerAddresses: addresses, caCert: this.o.caCert }));
          readdressed++;
          continue;
        }
      }
      const credential = await this.o.ops.machines.issueCredential(idx.uuid, u.machine);
      configs.set(
        u.ordinal,
        agentConfigText({
          model: idx.uuid,
          machine: u.machine,
          credential,
          controllerAddresses: addresses,
          caCert: this.o.caCert,
        }),
      );
    }
    if (readdressed > 0)
      this.o.log.info("pointed the application's agent configurations at this controller", {
        model: idx.model?.name,
        app,
        units: readdressed,
      });
    return configs;
  }

  /** Records each unit machine's pod (name, phase and readiness, IP) as its instance, for status and show-machine. */
  private async recordPods(idx: ModelIndex, { broker, placement }: PodPlace, signal: AbortSignal): Promise<void> {
    const units = [...idx.units.values()].filter((u) => {
      const m = idx.machines.get(u.machine);
      return m && onPods(m.substrate) && m.life === "alive";
    });
    const pods = await broker.unitPods(
      { model: idx.uuid, placement },
      units.map((u) => ({ app: u.app, unit: unitNumber(u.name) })),
      { signal },
    );
    for (const [i, u] of units.entries()) {
      const pod = pods[i]!;
      const instance: InstanceRecord = {
        id: pod.id,
        state: pod.state,
        ...(pod.address ? { address: pod.address } : {}),
      };
      const current = idx.machineInstall.get(u.machine);
      const state: MachineInstallDoc["state"] = pod.running ? "installed" : "installing";
      const step = pod.exists ? `pod ${instance.id} is ${instance.state}` : `waiting for pod ${instance.id}`;
      if (current && current.state === state && current.step === step && sameInstance(current.instance, instance))
        continue;
      await this.o.ops.machines
        .setInstall(idx.uuid, u.machine, { state, step, instance })
        .catch((err: unknown) => this.o.log.warn("could not record a pod", { machine: u.machine, err: describe(err) }));
    }
  }

  /** A removed model: its namespace goes when this controller made it for the model, else the model's objects in it. */
  private async removeModelPods(model: string, { broker, placement }: PodPlace, signal: AbortSignal): Promise<void> {
    const done = await broker.removeModel({ model, placement }, { signal });
    const { namespace } = broker.where(placement);
    if (done.removed === "space") this.o.log.info("deleted a removed model's namespace", { model, namespace });
    else if (done.removed === "applications")
      for (const app of done.applications)
        this.o.log.info("deleted a removed application's objects", { app, namespace });
  }
}

/**
 * The stores each unit of an application has, as its pods mount them: the application's storage
 * directives (pool, size, count) with the operator's location and the pool's attributes (a built-in
 * pool has none: its claims take the cluster's default class; a made one may name a `storage-class`).
 */
function podStorageOf(
  idx: ModelIndex,
  directives: Record<string, StorageDirective> | undefined,
  declared: Record<string, StorageSpec> | undefined,
): PodStorage[] {
  return Object.entries(directives ?? {})
    .filter(([, d]) => d.count > 0)
    .map(([name, d]) => {
      const spec = declared?.[name];
      return {
        name,
        count: d.count,
        size: d.size,
        ...(spec?.location ? { location: spec.location } : {}),
        multiple: (spec?.count.max ?? 1) > 1,
        attributes: idx.storagePools.get(d.pool)?.attributes ?? {},
      };
    });
}

/** An agent configuration in the Secret (undefined when it is not one). */
function configOf(configText: string): AgentConfig | undefined {
  try {
    return parseAgentConfig(configText, "the agent configuration");
  } catch {
    return undefined;
  }
}

/**
 * From the moment the source asks the target to activate (the target may then be writing the
 * objects; an abort from there must first learn the target did not take the model) and for good
 * once handed over.
 */
function leftToTarget(m: MigrationDoc | undefined): boolean {
  return handedOver(m) || (migrationActive(m) && m.activateAttempted === true);
}

function sameInstance(a: InstanceRecord | undefined, b: InstanceRecord): boolean {
  return !!a && a.id === b.id && a.state === b.state && a.address === b.address;
}

function describe(err: unknown): string {
  return StewardError.isInstance(err) ? err.message : (err as Error).message;
}
