/**
 * Replica hosts for a controller that runs on Kubernetes (`steward bootstrap kubernetes:`; the
 * kind's `replicaHosts()`, ../replica-hosts.ts): its own StatefulSet's pods. When the quorum keeper
 * needs a host, the leader takes the lowest pod whose DNS name no live member holds (a pod that came
 * back with an empty volume), or scales the StatefulSet up by one for a new pod; either way it writes
 * a one-time enrolment token for that pod into the enrolment Secret, waits for the pod to report
 * itself staged (the controller's pod-replica.ts), and hands it its data once the keeper has added it
 * to etcd, as for a cloud instance.
 *
 * The leader reaches the API server as its own pod's ServiceAccount (in-cluster configuration: the
 * mounted token, read again as the kubelet rotates it); the controller's Role (controller-pods.ts)
 * allows exactly what is done here, by name, in its own namespace. No user credential is stored for it.
 *
 * Each replica is recorded with its claim's uid (as its "instance"): a pod made again on a new
 * claim (its node and local disk lost) is then known lost for good, and the keeper replaces its
 * member at once instead of waiting `replaceAfter` (still one change at a time, with quorum, and
 * within the hourly limit).
 */
import { randomBytes } from "node:crypto";
import type { ReplicaSettingsByKind } from "../../api/core";
import type { Progress, ReplicaHost, ReplicaHostBroker } from "../brokers";
import type { ReplicaHostDeps } from "../replica-hosts";
import { controllerEnrolSecretName, replicaClaimName, replicaDnsName, replicaTokenKey } from "./controller-pods";
import { inClusterConnection } from "./in-cluster";
import { KubeApi } from "./kube-api";
import { KUBE_RESOURCES } from "./resources";
import { updateSecretData } from "./secret-data";

/** A pod taken for a replica: its ordinal and the token written for it. */
export interface PodHost extends ReplicaHost {
  ordinal: number;
  token: string;
}

const R = KUBE_RESOURCES;

type Settings = ReplicaSettingsByKind["kubernetes"];
interface KubeDoc {
  settings: Settings;
}

export class PodReplicaHosts implements ReplicaHostBroker<PodHost> {
  private api?: KubeApi;

  constructor(private readonly o: ReplicaHostDeps<Settings>) {}

  private get doc(): KubeDoc | undefined {
    return this.o.placement();
  }

  unavailable(): string | undefined {
    return this.doc ? undefined : "the controller does not run on Kubernetes (steward bootstrap kubernetes:CLUSTER)";
  }

  /** The client, made on first use (a replica that never acts needs no ServiceAccount token). */
  private kube(): KubeApi {
    this.api ??= new KubeApi(inClusterConnection());
    return this.api;
  }

  private address(doc: KubeDoc, ordinal: number): string {
    return replicaDnsName({ name: doc.settings.statefulSet, namespace: doc.settings.namespace }, ordinal);
  }

  /** The ordinal of a replica's DNS name, when it is one of this StatefulSet's pods. */
  private ordinalOf(doc: KubeDoc, address: string): number | undefined {
    const m = new RegExp(`^${doc.settings.statefulSet}-(\\d+)\\.`).exec(address);
    return m && address === this.address(doc, Number(m[1])) ? Number(m[1]) : undefined;
  }

  async acquire(nameFor: (address: string, preferred?: string) => string, progress: Progress): Promise<PodHost> {
    const doc = this.doc;
    if (!doc) throw new Error(this.unavailable());
    const api = this.kube();
    const { namespace, statefulSet } = doc.settings;
    const set = await api.get(R.statefulSets, statefulSet, { namespace });
    const live = new Set(this.o.memberHosts());
    const size = set.spec?.replicas ?? 0;
    let ordinal = [...Array(size).keys()].find((k) => !live.has(this.address(doc, k)));
    if (ordinal === undefined) {
      ordinal = size;
      progress(`scaling StatefulSet ${namespace}/${statefulSet} to ${size + 1} pods`);
      await api.scale(R.statefulSets, statefulSet, size + 1, { namespace });
    }
    const pod = `${statefulSet}-${ordinal}`;
    const address = this.address(doc, ordinal);
    // Named after its pod (new for each incarnation, as every replica's name is).
    nameFor(address, `${pod}-${randomBytes(2).toString("hex")}`);
    const token = await this.o.issueToken();
    await this.setToken(api, doc, ordinal, token);
    progress(`pod ${pod}: enrolment token written; waiting for the pod to see it and report itself`);
    try {
      const timeoutMs = this.o.stageTimeoutMs ?? 600_000;
      const deadline = Date.now() + timeoutMs;
      while (!(await this.o.staged(token))) {
        if (Date.now() > deadline)
          throw new Error(
            `pod ${namespace}/${pod} did not report itself within ${Math.round(timeoutMs / 1000)} s: is it running, and does its log say it waits for an enrolment token?`,
          );
        await new Promise((r) => setTimeout(r, 1000));
      }
      const claim = await api.find(R.persistentVolumeClaims, replicaClaimName(statefulSet, ordinal), {
        namespace,
      });
      return { address, ordinal, token, ...(claim?.metadata?.uid ? { instance: { id: claim.metadata.uid } } : {}) };
    } catch (err) {
      await this.setToken(api, doc, ordinal, undefined).catch(() => undefined);
      throw err;
    }
  }

  async start(host: PodHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    await this.o.provideData(host.token, host.address, name, initialCluster);
    progress(`data left for pod ${host.address.split(".")[0]}; it starts the replica once it has collected it`);
  }

  /** The replica has a vote: its token is spent; it is taken out of the Secret. */
  async joined(address: string): Promise<void> {
    const doc = this.doc;
    const ordinal = doc ? this.ordinalOf(doc, address) : undefined;
    if (doc && ordinal !== undefined) await this.setToken(this.kube(), doc, ordinal, undefined);
  }

  async failed(host: PodHost, why: string): Promise<void> {
    this.o.log.warn("a pod could not be made a replica", { pod: host.address, why });
    const doc = this.doc;
    if (doc) await this.setToken(this.kube(), doc, host.ordinal, undefined);
  }

  async release(host: PodHost): Promise<void> {
    const doc = this.doc;
    if (doc) await this.setToken(this.kube(), doc, host.ordinal, undefined);
  }

  /**
   * A pod of ours whose claim is not the one its replica ran on: another claim than the one it was
   * recorded with, or (the first replica, recorded without one) a claim made after it was added.
   */
  async lost(replica: { host: string; instance?: { id: string }; addedAt: string }): Promise<boolean> {
    const doc = this.doc;
    const ordinal = doc ? this.ordinalOf(doc, replica.host) : undefined;
    if (!doc || ordinal === undefined) return false;
    const claim = await this.kube().find(
      R.persistentVolumeClaims,
      replicaClaimName(doc.settings.statefulSet, ordinal),
      { namespace: doc.settings.namespace },
    );
    if (!claim?.metadata?.uid) return false;
    if (replica.instance) return claim.metadata.uid !== replica.instance.id;
    const made = Date.parse(claim.metadata.creationTimestamp ?? "");
    return Number.isFinite(made) && made > Date.parse(replica.addedAt);
  }

  /** Writes (or with undefined, removes) pod `ordinal`'s token in the enrolment Secret, keeping the rest. */
  private async setToken(api: KubeApi, doc: KubeDoc, ordinal: number, token: string | undefined): Promise<void> {
    const key = replicaTokenKey(ordinal);
    await updateSecretData(api, doc.settings.namespace, controllerEnrolSecretName(doc.settings.statefulSet), (data) => {
      if (token !== undefined) return { ...data, [key]: Buffer.from(token).toString("base64") };
      if (!(key in data)) return undefined;
      delete data[key];
      return data;
    });
  }

  close(): void {
    this.api?.close();
  }
}
