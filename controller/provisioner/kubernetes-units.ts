/**
 * Provisioning for `kubernetes` models: the leader keeps, per model, its namespace and, per
 * application, the objects of substrates/kubernetes/unit-pods.ts: a Secret with one agent
 * configuration per unit (written before the pods that read it), the Services, and a StatefulSet
 * with one pod per unit (unit N = pod N). Its replicas are 1 + the highest unit number still in the
 * model, dying units included: a unit's pod goes only after its agent has run the teardown hooks
 * and the unit is removed, highest ordinal first.
 *
 * The pod is the unit's machine: a machine made for a unit records its pod (name, phase, IP) as
 * its instance, and is finished as soon as its unit is gone (the StatefulSet deletes the pod).
 * An operator's workload containers are part of the pod template (substrates/kubernetes/workload-pods.ts).
 * Objects of applications and models that are gone are deleted (a namespace only when this
 * controller made it).
 *
 * A pass that fails (the cluster not reached, the credential refused, a call forbidden) is told
 * where users look, not only in the controller's log: each of the model's machines shows it as its
 * status ("cannot reach cluster https://…: connection refused; retrying") and a line goes to the
 * model's debug-log, once per new failure and once when the cluster answers again.
 *
 * Migration: the namespace's objects belong to the controller the model lives on. The source
 * leaves them alone from the moment it asks the target to activate the model (from then on the
 * target may be writing them) and for good once the model is handed over: a model that moved away
 * is forgotten, never swept. The target, on its first pass, rewrites each application's Secret to
 * name its own addresses and CA (see writeAgentConfigs), so pods made after the move come up
 * talking to it. No object names the controller (labels: managed-by steward, the model's uuid,
 * the application), so nothing else changes hands.
 *
 * Every API call carries the worker's signal: a deposed leader's pass ends at its call in flight, and
 * an aborted call is not told as a cluster failure. Each object is written whole (or patched to its
 * wanted form), so the next leader's pass converges from whatever the aborted one left.
 */
import type {
  AgentConfig,
  DebugLogRecord,
  KubernetesModelSettings,
  Logger,
  LogRecordLevel,
  ModelSubstrate,
} from "../../api";
import { StewardError, agentConfigText, contractOf, parseAgentConfig, podAgentConfigKey } from "../../api";
import { kubernetes } from "../../substrates";
import { credentialMatches } from "../security/credentials";
import type {
  CredentialOps,
  InstanceRecord,
  MachineInstallDoc,
  MigrationDoc,
  ModelIndex,
  StateCache,
  StateOps,
} from "../state";
import { handedOver, migrationActive, settingsOf } from "../state";
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
  probes?: kubernetes.PodProbeSettings;
  /** Adds records to a model's debug-log (this replica's; see server/model-logs.ts). */
  modelLog?: (model: string, records: DebugLogRecord[]) => void;
}

/** A model's cluster, opened from its credential. */
interface Cluster {
  api: kubernetes.KubeApi;
  namespace: string;
  key: string;
}

const FIELD_MANAGER = "steward-controller";
/** Models (and machines) this provisioner keeps: those of the kind whose units are pods. */
const onPods = (substrate: ModelSubstrate | undefined): boolean => contractOf(substrate).provisions === "pods";

export class KubernetesProvisioner extends Reconciler {
  readonly name = "kubernetes-provisioner";
  /** Clusters by model uuid (kept to clean up after a model removed by force, and reused while its credential is unchanged). */
  private readonly clusters = new Map<string, Cluster>();
  /** The failure each model's last pass ended with, while it lasts: told once, shown on its machines. */
  private readonly failures = new Map<string, string>();

  constructor(private readonly o: KubernetesProvisionerOptions) {
    super({ cache: o.cache, log: o.log, failure: "kubernetes provisioning failed", pollMs: o.pollIntervalMs ?? 5000 });
  }

  /** After the last pass, the clusters' connections close. */
  override async run(signal: AbortSignal): Promise<void> {
    try {
      await super.run(signal);
    } finally {
      for (const c of this.clusters.values()) c.api.close();
    }
  }

  private models(): ModelIndex[] {
    return [...this.o.cache.models.values()].filter((idx) => onPods(idx.model?.placement.substrate));
  }

  /** Whether the model's objects are another controller's now, or may be being taken over by it (see the file's comment). */
  private leftToTarget(uuid: string): boolean {
    return leftToTarget(this.o.cache.migrations.get(uuid));
  }

  /** What decides the objects: units and machines with their life, applications. */
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
    // Models removed (by force, or their last application gone and then the model): their objects go.
    for (const [uuid, cluster] of this.clusters) {
      if (live.has(uuid) || this.stopped) continue;
      // Gone from here because it moved: its objects are the target's.
      if (this.leftToTarget(uuid)) {
        this.forget(uuid);
        continue;
      }
      try {
        await this.removeModelObjects(uuid, cluster, signal);
        this.clusters.delete(uuid);
        cluster.api.close();
      } catch (err) {
        this.o.log.warn("could not delete a removed kubernetes model's objects", { model: uuid, err: describe(err) });
      }
    }
  }

  /** A pass failed: the controller's log and the model's debug-log say so once, each alive machine's status while it lasts. */
  private async failed(idx: ModelIndex, err: unknown): Promise<void> {
    const server = this.clusters.get(idx.uuid)?.api.connection.server;
    const message = `${server ? kubernetes.describeClusterFailure(err, server) : describe(err)}; retrying`;
    if (this.failures.get(idx.uuid) !== message) {
      this.failures.set(idx.uuid, message);
      this.o.log.warn("kubernetes model reconcile failed", { model: idx.model?.name, err: message });
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
    const server = this.clusters.get(idx.uuid)?.api.connection.server ?? "";
    this.o.log.info("kubernetes model provisioned again", { model: idx.model?.name, server });
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

  /** Drops a model's cluster connection without touching its objects. */
  private forget(uuid: string): void {
    const cluster = this.clusters.get(uuid);
    if (!cluster) return;
    this.clusters.delete(uuid);
    cluster.api.close();
    this.o.log.info("left a migrating model's kubernetes objects to the target controller", {
      model: uuid,
      namespace: cluster.namespace,
    });
  }

  private async clusterOf(idx: ModelIndex): Promise<Cluster> {
    const m = idx.model!;
    const { credential } = m.placement;
    const { namespace } = settingsOf<KubernetesModelSettings>(m);
    if (!credential || !namespace)
      throw new StewardError("invalid-request", `model ${m.name} has no kubernetes credential or namespace`);
    const c = await this.o.credentials.open(credential, "kubernetes");
    const key = `${credential}\n${c.kubeconfig}\n${c.context ?? ""}\n${namespace}`;
    const known = this.clusters.get(idx.uuid);
    if (known?.key === key) return known;
    known?.api.close();
    const cluster = { api: new kubernetes.KubeApi(kubernetes.connectionOfCredential(c)), namespace, key };
    this.clusters.set(idx.uuid, cluster);
    return cluster;
  }

  private async reconcileModel(idx: ModelIndex, signal: AbortSignal): Promise<void> {
    const cluster = await this.clusterOf(idx);
    const { api, namespace } = cluster;
    const R = kubernetes.KUBE_RESOURCES;
    if (!(await api.find(R.namespaces, namespace, { signal }))) {
      await api
        .create(R.namespaces, kubernetes.namespaceManifest(idx.uuid, namespace), { signal })
        .catch((err: unknown) => {
          if (!kubernetes.isAlreadyExists(err)) throw err;
        });
      this.o.log.info("made the model's namespace", { model: idx.model?.name, namespace });
    }
    const byApp = new Map<string, { ordinal: number; machine: string }[]>();
    for (const u of idx.units.values()) {
      const list = byApp.get(u.app) ?? [];
      list.push({ ordinal: unitNumber(u.name), machine: u.machine });
      byApp.set(u.app, list);
    }
    for (const app of new Set([...idx.apps.keys(), ...byApp.keys()])) {
      if (this.stopped) return;
      await this.reconcileApp(idx, cluster, app, byApp.get(app) ?? [], signal);
    }
    // StatefulSets of applications that are gone.
    const sets = await api.list(R.statefulSets, { namespace, labelSelector: kubernetes.selectorOf(idx.uuid), signal });
    for (const s of sets.items) {
      const app = s.metadata?.labels?.[kubernetes.LABELS.app];
      if (app && !idx.apps.has(app) && !byApp.has(app)) await this.removeAppObjects(cluster, idx.uuid, app, signal);
    }
    await this.recordPods(idx, cluster, signal);
    // A machine made for a unit is its pod: once the unit is gone, the StatefulSet deletes the pod.
    for (const m of [...idx.machines.values()]) {
      if (!onPods(m.substrate) || m.life === "alive" || this.stopped) continue;
      await this.o.ops.machines.finish(idx.uuid, m.id);
      this.o.log.info("removed a unit's pod machine", { model: idx.model?.name, machine: m.id, unit: m.createdFor });
    }
  }

  private async reconcileApp(
    idx: ModelIndex,
    cluster: Cluster,
    app: string,
    units: { ordinal: number; machine: string }[],
    signal: AbortSignal,
  ): Promise<void> {
    const { api, namespace } = cluster;
    const R = kubernetes.KUBE_RESOURCES;
    const spec = { model: idx.uuid, namespace, app };
    // Units first get their agent configuration, then their pods.
    if (units.length > 0) await this.writeAgentConfigs(idx, cluster, app, units, signal);
    for (const svc of kubernetes.serviceManifests(spec)) {
      if (!(await api.find(R.services, svc.metadata!.name!, { namespace, signal })))
        await api.create(R.services, svc, { signal }).catch((err: unknown) => {
          if (!kubernetes.isAlreadyExists(err)) throw err;
        });
    }
    const replicas = units.length === 0 ? 0 : Math.max(...units.map((u) => u.ordinal)) + 1;
    const containers = this.o.cache.operators.get(idx.apps.get(app)?.operator.hash ?? "")?.meta.containers;
    const want = kubernetes.statefulSetManifest({
      ...spec,
      replicas,
      agentImage: this.o.agentImage,
      ...(this.o.probes ? { probes: this.o.probes } : {}),
      ...(containers ? { containers } : {}),
    });
    const have = await api.find(R.statefulSets, app, { namespace, signal });
    if (!have) {
      await api.create(R.statefulSets, want, { signal });
      this.o.log.info("made the application's StatefulSet", { model: idx.model?.name, app, replicas });
      return;
    }
    const hash = want.metadata!.annotations![kubernetes.TEMPLATE_HASH];
    if (have.metadata?.annotations?.[kubernetes.TEMPLATE_HASH] !== hash) {
      await api.patch<kubernetes.StatefulSet>(
        R.statefulSets,
        app,
        {
          metadata: { annotations: { [kubernetes.TEMPLATE_HASH]: hash } },
          spec: { replicas, template: want.spec!.template },
        },
        { namespace, type: "merge", fieldManager: FIELD_MANAGER, signal },
      );
      this.o.log.info("updated the application's pod template", { model: idx.model?.name, app, replicas });
    } else if (have.spec?.replicas !== replicas) {
      await api.scale(R.statefulSets, app, replicas, { namespace, signal });
      this.o.log.info("scaled the application's StatefulSet", {
        model: idx.model?.name,
        app,
        from: have.spec?.replicas,
        to: replicas,
      });
    }
  }

  /**
   * Keeps one agent configuration per unit in the application's Secret. A unit whose entry names
   * its machine keeps it (its credential is still good); a new one (or a number reused by a new
   * unit) gets a new credential, which ends the machine's old one.
   *
   * An entry written by another controller (its CA: the model migrated here) is rewritten with
   * this controller's addresses and CA, KEEPING its credential once it matches the hash this
   * controller holds for the machine (imported with it). Why keep rather than issue new ones:
   * at SUCCESS every running agent switched here with the credential it has, and a pod agent reads
   * its mounted configuration only when it starts, so a new credential would lock out each running
   * agent until its pod restarts; the plaintext is in this Secret anyway, which the controller
   * that holds the model's cluster credential can read. An entry whose credential does not match
   * gets a new one, as a new unit does.
   */
  private async writeAgentConfigs(
    idx: ModelIndex,
    cluster: Cluster,
    app: string,
    units: { ordinal: number; machine: string }[],
    signal: AbortSignal,
  ): Promise<void> {
    const { api, namespace } = cluster;
    const R = kubernetes.KUBE_RESOURCES;
    const name = kubernetes.agentsSecretName(app);
    const have = await api.find(R.secrets, name, { namespace, signal });
    const configs = new Map<number, string>();
    const addresses = this.o.controllerAddresses();
    let changed = !have;
    let readdressed = 0;
    for (const u of units.sort((a, b) => a.ordinal - b.ordinal)) {
      const current = have?.data?.[podAgentConfigKey(u.ordinal)];
      const text = current ? Buffer.from(current, "base64").toString() : undefined;
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
          changed = true;
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
      changed = true;
    }
    if (have && Object.keys(have.data ?? {}).length !== configs.size) changed = true;
    if (!changed) return;
    const secret: kubernetes.Secret = kubernetes.agentsSecretManifest({ model: idx.uuid, namespace, app }, configs);
    if (have)
      await api.replace(
        R.secrets,
        { ...secret, metadata: { ...secret.metadata, resourceVersion: have.metadata!.resourceVersion! } },
        { signal },
      );
    else await api.create(R.secrets, secret, { signal });
    if (readdressed > 0)
      this.o.log.info("pointed the application's agent configurations at this controller", {
        model: idx.model?.name,
        app,
        units: readdressed,
      });
  }

  /** Records each unit machine's pod (name, phase and readiness, IP) as its instance, for status and show-machine. */
  private async recordPods(idx: ModelIndex, cluster: Cluster, signal: AbortSignal): Promise<void> {
    const pods = await cluster.api.list(kubernetes.KUBE_RESOURCES.pods, {
      namespace: cluster.namespace,
      labelSelector: kubernetes.selectorOf(idx.uuid),
      signal,
    });
    const byName = new Map(pods.items.map((p) => [p.metadata!.name!, p]));
    for (const u of idx.units.values()) {
      const m = idx.machines.get(u.machine);
      if (!m || !onPods(m.substrate) || m.life !== "alive") continue;
      const pod = byName.get(kubernetes.podName(u.app, unitNumber(u.name)));
      const instance: InstanceRecord = pod
        ? instanceOf(pod, cluster.namespace)
        : { id: `${cluster.namespace}/${kubernetes.podName(u.app, unitNumber(u.name))}`, state: "pending" };
      const current = idx.machineInstall.get(m.id);
      const state: MachineInstallDoc["state"] = pod?.status?.phase === "Running" ? "installed" : "installing";
      const step = pod ? `pod ${instance.id} is ${instance.state}` : `waiting for pod ${instance.id}`;
      if (current && current.state === state && current.step === step && sameInstance(current.instance, instance))
        continue;
      await this.o.ops.machines
        .setInstall(idx.uuid, m.id, { state, step, instance })
        .catch((err: unknown) => this.o.log.warn("could not record a pod", { machine: m.id, err: describe(err) }));
    }
  }

  private async removeAppObjects(cluster: Cluster, model: string, app: string, signal: AbortSignal): Promise<void> {
    const { api, namespace } = cluster;
    const R = kubernetes.KUBE_RESOURCES;
    const gone = (err: unknown) => {
      if (!kubernetes.isNotFound(err)) throw err;
    };
    await api.delete(R.statefulSets, app, { namespace, propagationPolicy: "Foreground", signal }).catch(gone);
    for (const svc of kubernetes.serviceManifests({ model, namespace, app }))
      await api.delete(R.services, svc.metadata!.name!, { namespace, signal }).catch(gone);
    await api.delete(R.secrets, kubernetes.agentsSecretName(app), { namespace, signal }).catch(gone);
    this.o.log.info("deleted a removed application's objects", { app, namespace });
  }

  /** A removed model: the namespace goes when this controller made it for the model, else the model's objects in it. */
  private async removeModelObjects(model: string, cluster: Cluster, signal: AbortSignal): Promise<void> {
    const { api, namespace } = cluster;
    const R = kubernetes.KUBE_RESOURCES;
    const ns = await api.find(R.namespaces, namespace, { signal });
    if (!ns) return;
    if (ns.metadata?.labels?.[kubernetes.LABELS.model] === model) {
      await api.delete(R.namespaces, namespace, { signal }).catch((err: unknown) => {
        if (!kubernetes.isNotFound(err)) throw err;
      });
      this.o.log.info("deleted a removed model's namespace", { model, namespace });
      return;
    }
    const sets = await api.list(R.statefulSets, { namespace, labelSelector: kubernetes.selectorOf(model), signal });
    for (const s of sets.items) await this.removeAppObjects(cluster, model, s.metadata!.name!, signal);
  }
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

function instanceOf(pod: kubernetes.Pod, namespace: string): InstanceRecord {
  const ready = pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
  const phase = pod.metadata?.deletionTimestamp ? "Terminating" : (pod.status?.phase ?? "Pending");
  return {
    id: `${namespace}/${pod.metadata!.name!}`,
    state: phase === "Running" ? (ready ? "running, ready" : "running, not ready") : phase.toLowerCase(),
    ...(pod.status?.podIP ? { address: pod.status.podIP } : {}),
  };
}

function sameInstance(a: InstanceRecord | undefined, b: InstanceRecord): boolean {
  return !!a && a.id === b.id && a.state === b.state && a.address === b.address;
}

function describe(err: unknown): string {
  return StewardError.isInstance(err) ? err.message : (err as Error).message;
}
