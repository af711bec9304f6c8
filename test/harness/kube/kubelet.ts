/**
 * The kubelet seam of the fake API server. The server runs the scheduler's part itself (each new
 * pod is bound to the kubelet's node: `spec.nodeName` and the PodScheduled condition), then hands
 * the kubelet every pod bound to it: {@link Kubelet.syncPod} on each change, {@link Kubelet.killPod}
 * once the pod is being deleted. The kubelet answers only through its {@link KubeletHost}: status
 * writes (phase, podIP, conditions, containerStatuses) and, after a deletion, word that the pod's
 * containers are gone, when the server removes the pod (the kubelet's final delete).
 *
 * {@link SimpleKubelet} starts nothing: a pod is Running at once with an IP from a loopback range;
 * it is Ready at once unless a container declares a readinessProbe, in which case the test says
 * when ({@link SimpleKubelet.setReady}), as a probe would. A kubelet that runs containers as
 * processes replaces it behind the same interface.
 */
import type { KubeObject } from "./kinds";
import type { TokenRequestSpec } from "./service-account-tokens";

export interface KubeletHost {
  /** Reads an object the pod refers to (`secrets`, `configmaps`, `persistentvolumeclaims`, `pods`…), as a kubelet does through the API. */
  read(plural: string, namespace: string, name: string): KubeObject | undefined;
  /** Lists a kind's objects in a namespace (`services`, `endpointslices`…), as a kubelet's informers do; the cluster DNS reads through it. */
  list(plural: string, namespace: string): KubeObject[];
  /** Changes a pod's status; skipped (undefined) if the pod is gone or was recreated with another uid. */
  updatePodStatus(
    namespace: string,
    name: string,
    uid: string,
    mutate: (status: any, pod: KubeObject) => void,
  ): KubeObject | undefined;
  /** The deleted pod's containers have stopped: the server removes the pod. */
  podTerminated(namespace: string, name: string, uid: string): void;
  /** A ServiceAccount token (the TokenRequest API), for a pod's projected volume; throws the Status of a refusal. */
  requestToken(
    namespace: string,
    serviceAccount: string,
    spec: TokenRequestSpec,
  ): { token: string; expirationTimestamp: string };
}

export interface Kubelet {
  /** The node this kubelet is; pods are bound to it. */
  readonly nodeName: string;
  /** Where its pods reach this machine, once started, if they run anywhere (the process kubelet's bridge address). */
  readonly gateway?: string;
  start(host: KubeletHost): Promise<void> | void;
  /**
   * A pod bound to this node was created or changed. Called from inside the write that caused it:
   * do the work later (never write to the server synchronously from here).
   */
  syncPod(pod: KubeObject): void;
  /** The pod is being deleted (deletionTimestamp set; `force` when already removed or with no grace): stop it, then call podTerminated. Same rule as syncPod. */
  killPod(pod: KubeObject, force: boolean): void;
  close(): Promise<void>;
}

export interface SimpleKubeletOptions {
  /** @default "fake-node-0" */
  nodeName?: string;
  /** The first two octets of pod IPs (loopback: nothing else is ever addressed here). @default "127.1" */
  ipPrefix?: string;
}

const now = (): string => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z");
type Condition = { type: string; status: string; lastTransitionTime?: string; lastProbeTime?: null; reason?: string };

/** Sets a condition, moving lastTransitionTime only when the status changes (as the kubelet does). */
export function setCondition(
  status: { conditions?: Condition[] },
  type: string,
  value: boolean,
  reason?: string,
): void {
  const conditions = (status.conditions ??= []);
  const want = value ? "True" : "False";
  const c = conditions.find((x) => x.type === type);
  if (c) {
    if (c.status !== want) {
      c.status = want;
      c.lastTransitionTime = now();
    }
    if (reason) c.reason = reason;
    else delete c.reason;
  } else
    conditions.push({
      type,
      status: want,
      lastProbeTime: null,
      lastTransitionTime: now(),
      ...(reason ? { reason } : {}),
    });
}

export const podReady = (pod: KubeObject | undefined): boolean =>
  !!pod?.status?.conditions?.some((c: Condition) => c.type === "Ready" && c.status === "True");

export class SimpleKubelet implements Kubelet {
  readonly nodeName: string;
  private host?: KubeletHost;
  private readonly ipPrefix: string;
  private nextIp = 2;
  /** Pods started, by uid. */
  private readonly running = new Map<string, { namespace: string; name: string; ip: string }>();
  private readonly pending = new Set<NodeJS.Immediate>();

  constructor(o: SimpleKubeletOptions = {}) {
    this.nodeName = o.nodeName ?? "fake-node-0";
    this.ipPrefix = o.ipPrefix ?? "127.1";
  }

  start(host: KubeletHost): void {
    this.host = host;
  }

  syncPod(pod: KubeObject): void {
    const uid = pod.metadata.uid!;
    if (this.running.has(uid)) return;
    const n = this.nextIp++;
    const entry = {
      namespace: pod.metadata.namespace!,
      name: pod.metadata.name!,
      ip: `${this.ipPrefix}.${Math.floor(n / 254) % 256}.${(n % 254) + 1}`,
    };
    this.running.set(uid, entry);
    const probed = [...(pod.spec?.containers ?? [])].some((c: { readinessProbe?: unknown }) => c.readinessProbe);
    this.later(() =>
      this.host?.updatePodStatus(entry.namespace, entry.name, uid, (s, p) => {
        const started = now();
        s.phase = "Running";
        s.hostIP = "127.0.0.1";
        s.hostIPs = [{ ip: "127.0.0.1" }];
        s.podIP = entry.ip;
        s.podIPs = [{ ip: entry.ip }];
        s.startTime = started;
        setCondition(s, "PodReadyToStartContainers", true);
        setCondition(s, "Initialized", true);
        setCondition(s, "ContainersReady", !probed);
        setCondition(s, "Ready", !probed);
        s.initContainerStatuses = (p.spec?.initContainers ?? []).map((c: { name: string; image: string }) => ({
          name: c.name,
          image: c.image,
          imageID: "",
          containerID: `fake://${uid}/${c.name}`,
          ready: true,
          restartCount: 0,
          started: false,
          state: {
            terminated: {
              exitCode: 0,
              reason: "Completed",
              startedAt: started,
              finishedAt: started,
              containerID: `fake://${uid}/${c.name}`,
            },
          },
        }));
        s.containerStatuses = (p.spec?.containers ?? []).map((c: { name: string; image: string }) => ({
          name: c.name,
          image: c.image,
          imageID: "",
          containerID: `fake://${uid}/${c.name}`,
          ready: !probed,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: started } },
        }));
      }),
    );
  }

  killPod(pod: KubeObject, _force: boolean): void {
    const uid = pod.metadata.uid!;
    this.running.delete(uid);
    this.later(() => this.host?.podTerminated(pod.metadata.namespace!, pod.metadata.name!, uid));
  }

  /**
   * What a readiness probe would report for the pod now running as `namespace/name`: its Ready and
   * ContainersReady conditions and its containers' `ready`. False if no such pod runs here.
   */
  setReady(namespace: string, name: string, ready: boolean): boolean {
    const uid = [...this.running].find(([, e]) => e.namespace === namespace && e.name === name)?.[0];
    if (!uid || !this.host) return false;
    return !!this.host.updatePodStatus(namespace, name, uid, (s) => {
      setCondition(s, "ContainersReady", ready, ready ? undefined : "ContainersNotReady");
      setCondition(s, "Ready", ready, ready ? undefined : "ContainersNotReady");
      for (const c of s.containerStatuses ?? []) c.ready = ready;
    });
  }

  async close(): Promise<void> {
    for (const p of this.pending) clearImmediate(p);
    this.pending.clear();
  }

  private later(fn: () => void): void {
    const h = setImmediate(() => {
      this.pending.delete(h);
      fn();
    });
    this.pending.add(h);
  }
}
