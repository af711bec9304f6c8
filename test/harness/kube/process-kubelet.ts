/**
 * A FAKE kubelet that runs each pod's containers as real processes on this machine, for tests
 * and benchmarks of the Kubernetes substrate (no Kubernetes runs here). Checked against the
 * kubelet's documented behaviour (kubernetes.io: pod lifecycle, init containers, container
 * restart policy and back-off, probes, termination, volumes, the downward API), not tuned to the
 * substrate:
 *
 * - each pod gets a network namespace with its own IP on a bridge (pod-network.ts); its containers
 *   share it (localhost between containers of a pod), and each runs in its own mount, UTS (hostname
 *   = pod name) and PID namespaces, with its volume mounts bound at their mountPaths;
 * - images map to commands on this machine (`images`: the project's own images to its bundles,
 *   test images to small programs; an exact `name:tag` before the untagged name); an unknown image
 *   waits in ErrImagePull, as a pull would fail;
 * - init containers run one by one to completion before the containers start; a failed one runs
 *   again after the back-off; containers are restarted after they exit (restartPolicy Always, the
 *   StatefulSet's) with the documented back-off (10 s doubling to 300 s; tests may shorten it);
 * - readiness, liveness and startup probes (probes.ts) set `ready`, restart the container, and
 *   gate the other probes until startup succeeded; the pod's Ready condition is every container ready;
 * - deletion sends SIGTERM, waits the pod's grace period (tests may cap it), then SIGKILL;
 * - volumes: emptyDir (per pod), secret and configMap (files from the object, written at start and
 *   brought up to date at each periodic sync, as the kubelet does for mounts without subPath),
 *   projected (secret, configMap and downwardAPI sources, and serviceAccountToken: a token for the
 *   pod's ServiceAccount bound to the pod, asked of the API server and written again at the
 *   periodic sync once older than 80 % of its lifetime or 24 hours, as the kubelet rotates them),
 *   persistentVolumeClaim (the host path of the volume the claim is bound to, once it is bound: a
 *   claim deleted and made again gets a new, empty volume; persistentvolume-controller.ts), its
 *   ownership set to the pod's fsGroup at each pod's mount (volume-ownership.ts);
 * - the API server's address in each container's environment (`KUBERNETES_SERVICE_HOST`,
 *   `KUBERNETES_SERVICE_PORT`, from the Service `kubernetes` in `default`, as "Accessing the
 *   Kubernetes API from a Pod" describes): its cluster IP, or, the fake having no kube-proxy to
 *   route one, the ready address of a headless `kubernetes` Service's EndpointSlice;
 * - cluster DNS: the node serves the cluster's DNS records (cluster-dns.ts) on its bridge address,
 *   port 53 (dns-server.ts), and each container gets the kubelet's resolv.conf pointing there, its
 *   managed /etc/hosts and an nsswitch.conf (pod-dns.ts) bound over its own. A DNS server rather
 *   than /etc/hosts entries for every name: the pod's own resolver then applies the search list and
 *   ndots as in a cluster (`web-1.web-peers` from its namespace only), every name is answered from
 *   the API's current state (no file to keep up to date in every pod), and Node's `dns.resolve*`
 *   (c-ares, which ignores /etc/hosts) works for fully qualified names as well as getaddrinfo. The
 *   host side asks the same server: {@link ProcessKubelet.resolve}.
 */
import { execFile, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { KubeObject } from "./kinds";
import { ClusterDns } from "./cluster-dns";
import { DnsServer } from "./dns-server";
import type { Kubelet, KubeletHost } from "./kubelet";
import { setCondition } from "./kubelet";
import { podDnsFiles } from "./pod-dns";
import { PodNetwork } from "./pod-network";
import { applyVolumeOwnership } from "./volume-ownership";
import type { ProbeSpec } from "./probes";
import { scheduleProbe } from "./probes";

/** What an image runs: its ENTRYPOINT and CMD, as a Dockerfile would say. */
export interface ImageSpec {
  entrypoint: string[];
  cmd?: string[];
  workingDir?: string;
}

export interface ProcessKubeletOptions {
  /** @default "fake-node-0" */
  nodeName?: string;
  /**
   * Image name → what it runs. A container's image is looked up as it is (`name:tag` or
   * `name@digest`) first, then untagged: an exact key wins, so a test can map one tag to another
   * build (a newer release's controller) while every other tag of the name runs this one.
   */
  images: Record<string, ImageSpec>;
  /** Where pods keep their volumes and logs. */
  dataDir: string;
  /** Back-off before a container that exited starts again. @default { initialMs: 10000, maxMs: 300000 } (the kubelet's) */
  restartBackoff?: { initialMs: number; maxMs: number };
  /** At most this grace on deletion, whatever the pod asks (the default grace is 30 s). */
  maxGraceSeconds?: number;
  /** How often mounted Secrets and ConfigMaps are brought up to date. @default 60000 (the kubelet's sync period) */
  secretRefreshMs?: number;
  /** The cluster domain (the real kubelet's --cluster-domain). @default "cluster.local" */
  clusterDomain?: string;
  /**
   * Volume mounts made read-only whatever the pod says, by container name and mountPath. Not a
   * kubelet setting: a test's stand-in for a cluster where that container's user may not write there
   * (this fake runs every container as root, ignoring securityContext), to show it never does.
   */
  readOnlyMounts?: { container: string; mountPath: string }[];
}

const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const now = (): string => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z");
const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

interface ContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: {
    name: string;
    value?: string;
    valueFrom?: {
      fieldRef?: { fieldPath: string };
      secretKeyRef?: { name: string; key: string; optional?: boolean };
      configMapKeyRef?: { name: string; key: string; optional?: boolean };
    };
  }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: ProbeSpec;
  livenessProbe?: ProbeSpec;
  startupProbe?: ProbeSpec;
}

type ContainerState =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | { terminated: { exitCode: number; signal?: number; reason: string; startedAt?: string; finishedAt: string } };

type KeyItems = { name: string; optional?: boolean; items?: { key: string; path: string }[] };
type ProjectedSource = {
  secret?: KeyItems;
  configMap?: KeyItems;
  downwardAPI?: { items?: { path: string; fieldRef?: { fieldPath: string } }[] };
  serviceAccountToken?: { path: string; expirationSeconds?: number; audience?: string };
};

type Exit = { code: number | null; signal: NodeJS.Signals | null };

class Container {
  proc?: ChildProcess;
  /** Set at spawn, before anything can be missed: a container may exit at once. */
  exited?: Promise<Exit>;
  pid1?: number;
  state: ContainerState = { waiting: { reason: "ContainerCreating" } };
  lastState?: ContainerState;
  restartCount = 0;
  ready = false;
  started = false;
  startedAt = "";
  backoffMs = 0;
  stopProbes: (() => void)[] = [];
  restartTimer?: NodeJS.Timeout;
  constructor(
    readonly spec: ContainerSpec,
    readonly init: boolean,
  ) {}
}

class RunningPod {
  ip = "";
  netns = "";
  release?: () => Promise<void>;
  readonly containers: Container[];
  readonly inits: Container[];
  initialized = false;
  stopping = false;
  startTime = now();
  /** The files of pod-dns.ts written for it, bound over /etc/<name> in each container. */
  dnsFiles: string[] = [];
  /** Projected ServiceAccount tokens written, by file: when each was issued and expires (ms). */
  readonly tokens = new Map<string, { issued: number; expires: number }>();
  /** Claims whose volume's ownership was set for this pod (once per pod, as at its mount): by claim name. */
  readonly ownedClaims = new Map<string, Promise<void>>();
  constructor(
    readonly pod: KubeObject,
    readonly dir: string,
  ) {
    this.inits = (pod.spec?.initContainers ?? []).map((c: ContainerSpec) => new Container(c, true));
    this.containers = (pod.spec?.containers ?? []).map((c: ContainerSpec) => new Container(c, false));
  }
  get uid(): string {
    return this.pod.metadata.uid!;
  }
  get namespace(): string {
    return this.pod.metadata.namespace!;
  }
  get name(): string {
    return this.pod.metadata.name!;
  }
}

export class ProcessKubelet implements Kubelet {
  readonly nodeName: string;
  private host?: KubeletHost;
  private network?: PodNetwork;
  private dns?: DnsServer;
  private readonly pods = new Map<string, RunningPod>();
  private readonly publishing = new Set<string>();
  private closed = false;
  private syncTimer?: NodeJS.Timeout;

  constructor(private readonly o: ProcessKubeletOptions) {
    this.nodeName = o.nodeName ?? "fake-node-0";
  }

  /** Where pods reach this machine (the bridge's address): a controller for pods listens here. */
  get gateway(): string {
    if (!this.network) throw new Error("the process kubelet is not started");
    return this.network.gateway;
  }

  async start(host: KubeletHost): Promise<void> {
    this.host = host;
    await mkdir(this.o.dataDir, { recursive: true });
    this.network = await PodNetwork.create();
    const records = new ClusterDns(host, this.o.clusterDomain ?? "cluster.local");
    try {
      this.dns = await DnsServer.listen(this.network.gateway, (name) => records.lookup(name));
    } catch (err) {
      await this.network.close();
      throw new Error(
        `the fake kubelet could not serve cluster DNS on ${this.network.gateway}:53: ${(err as Error).message}`,
      );
    }
    let syncing = false;
    this.syncTimer = setInterval(() => {
      if (syncing) return;
      syncing = true;
      void this.refreshConfigVolumes().finally(() => {
        syncing = false;
      });
    }, this.o.secretRefreshMs ?? 60_000);
    this.syncTimer.unref();
  }

  /**
   * The addresses cluster DNS gives `name`, asked of the same server the pods ask (empty when the
   * name does not resolve). With a `namespace`, `name` is expanded as in a pod of that namespace
   * (search list `<ns>.svc.<zone> svc.<zone> <zone>`, ndots 5); without, it must be fully qualified.
   */
  async resolve(name: string, namespace?: string): Promise<string[]> {
    if (!this.dns) throw new Error("the process kubelet is not started");
    const resolver = new Resolver({ timeout: 1000, tries: 2 });
    resolver.setServers([`${this.dns.address}:${this.dns.port}`]);
    const zone = this.o.clusterDomain ?? "cluster.local";
    const bare = name.replace(/\.$/, "");
    const search =
      namespace && !name.endsWith(".")
        ? [`${namespace}.svc.${zone}`, `svc.${zone}`, zone].map((s) => `${bare}.${s}`)
        : [];
    // A name with at least ndots dots is tried as it is first, else after the search list (resolv.conf(5)).
    const tries = bare.split(".").length - 1 >= 5 || !search.length ? [bare, ...search] : [...search, bare];
    for (const candidate of tries) {
      try {
        return await resolver.resolve4(candidate);
      } catch (err) {
        if (!["ENOTFOUND", "ENODATA"].includes((err as { code?: string }).code ?? "")) throw err;
      }
    }
    return [];
  }

  syncPod(pod: KubeObject): void {
    if (this.closed || this.pods.has(pod.metadata.uid!)) return;
    const p = new RunningPod(pod, join(this.o.dataDir, "pods", pod.metadata.uid!));
    this.pods.set(p.uid, p);
    setImmediate(
      () =>
        void this.startPod(p).catch((err: unknown) =>
          this.fail(p, `could not start the pod: ${(err as Error).message}`),
        ),
    );
  }

  killPod(pod: KubeObject, force: boolean): void {
    const p = this.pods.get(pod.metadata.uid!);
    if (!p) {
      setImmediate(() => this.host?.podTerminated(pod.metadata.namespace!, pod.metadata.name!, pod.metadata.uid!));
      return;
    }
    if (p.stopping) return;
    p.stopping = true;
    const asked = force
      ? 0
      : (pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30);
    const grace = Math.min(asked, this.o.maxGraceSeconds ?? asked);
    setImmediate(() => void this.stopPod(p, grace).finally(() => this.host?.podTerminated(p.namespace, p.name, p.uid)));
  }

  /** What a container printed (as `kubectl logs`), all of it. */
  async logs(namespace: string, pod: string, container: string): Promise<string> {
    const p = this.find(namespace, pod);
    return p ? readFile(join(p.dir, "logs", `${container}.log`), "utf8").catch(() => "") : "";
  }

  /** Runs a command in a container (as `kubectl exec`). */
  exec(
    namespace: string,
    pod: string,
    container: string,
    cmd: string[],
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    const c = this.find(namespace, pod)?.containers.find((x) => x.spec.name === container);
    if (!c?.pid1)
      return Promise.resolve({
        code: 126,
        stdout: "",
        stderr: `container ${container} of ${namespace}/${pod} is not running`,
      });
    return new Promise((resolve) =>
      execFile("nsenter", ["-t", String(c.pid1), "-n", "-m", "-u", "-p", "--", ...cmd], (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
  }

  /** Host PIDs of the processes in a pod's network namespace (none once it is gone). */
  async processes(namespace: string, pod: string): Promise<number[]> {
    const p = this.find(namespace, pod);
    if (!p?.netns) return [];
    return new Promise((resolve) =>
      execFile("ip", ["netns", "pids", p.netns], (err, out) =>
        resolve(err ? [] : out.split("\n").filter(Boolean).map(Number)),
      ),
    );
  }

  /**
   * Cuts a pod off from TCP `addresses` ("host:port"), as a partition between its node and those
   * servers would: its packets to them are refused in its network namespace, while everything else
   * (the kubelet's exec and probes, other pods, clients) still reaches it. Returns the heal.
   */
  async cutOff(namespace: string, pod: string, addresses: readonly string[]): Promise<() => Promise<void>> {
    const netns = this.find(namespace, pod)?.netns;
    if (!netns) throw new Error(`pod ${namespace}/${pod} has no network namespace (not running)`);
    const rules = addresses.map((a) => {
      const at = a.lastIndexOf(":");
      return ["to", `${a.slice(0, at)}/32`, "ipproto", "tcp", "dport", a.slice(at + 1), "prohibit"];
    });
    const ip = (args: string[]): Promise<void> =>
      new Promise((resolve, reject) =>
        execFile("ip", ["-n", netns, "rule", ...args], (err, _out, stderr) =>
          err ? reject(new Error(`ip -n ${netns} rule ${args.join(" ")}: ${stderr || err.message}`)) : resolve(),
        ),
      );
    for (const r of rules) await ip(["add", ...r]);
    return async () => {
      for (const r of rules) await ip(["del", ...r]).catch(() => undefined); // gone with the pod
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.syncTimer);
    await Promise.all(
      [...this.pods.values()].map((p) => {
        p.stopping = true;
        return this.stopPod(p, 0);
      }),
    );
    await this.dns?.close();
    await this.network?.close();
  }

  private find(namespace: string, name: string): RunningPod | undefined {
    return (
      [...this.pods.values()].find((p) => p.namespace === namespace && p.name === name && !p.stopping) ??
      [...this.pods.values()].find((p) => p.namespace === namespace && p.name === name)
    );
  }

  private async startPod(p: RunningPod): Promise<void> {
    await mkdir(join(p.dir, "logs"), { recursive: true });
    const net = await this.network!.attach();
    Object.assign(p, { ip: net.ip, netns: net.netns, release: net.release });
    if (p.stopping) return;
    await this.writeDnsFiles(p);
    this.publish(p);
    for (const c of p.inits) {
      while (!p.stopping) {
        const code = await this.runToCompletion(p, c);
        if (code === 0) break;
        await this.backoff(p, c);
      }
    }
    if (p.stopping) return;
    p.initialized = true;
    for (const c of p.containers) void this.runContainer(p, c);
  }

  /** Runs an init container once; its exit code (or -1 if it could not start). */
  private async runToCompletion(p: RunningPod, c: Container): Promise<number> {
    const proc = await this.spawnContainer(p, c);
    if (!proc) return -1;
    const { code, signal } = await c.exited!;
    c.proc = undefined;
    c.pid1 = undefined;
    c.state = {
      terminated: {
        exitCode: code ?? 128 + 9,
        reason: code === 0 ? "Completed" : "Error",
        startedAt: c.startedAt,
        finishedAt: now(),
        ...(signal ? { signal: 9 } : {}),
      },
    };
    this.publish(p);
    return code ?? -1;
  }

  /** Runs a container and keeps it running (restartPolicy Always) until the pod stops. */
  private async runContainer(p: RunningPod, c: Container): Promise<void> {
    if (p.stopping) return;
    const proc = await this.spawnContainer(p, c);
    if (!proc) {
      await this.backoff(p, c);
      return this.runContainer(p, c);
    }
    const runningSince = Date.now();
    this.probe(p, c);
    void c.exited!.then(({ code, signal }) => {
      for (const stop of c.stopProbes) stop();
      c.stopProbes = [];
      c.proc = undefined;
      c.pid1 = undefined;
      c.ready = false;
      c.started = false;
      const exitCode = code ?? 128 + (signal === "SIGKILL" ? 9 : 15);
      c.state = {
        terminated: {
          exitCode,
          reason: exitCode === 0 ? "Completed" : "Error",
          startedAt: c.startedAt,
          finishedAt: now(),
        },
      };
      this.publish(p);
      if (p.stopping) return;
      // A container that ran 10 minutes without trouble starts again with the back-off reset (the kubelet's rule).
      if (Date.now() - runningSince > 600_000) c.backoffMs = 0;
      c.lastState = c.state;
      c.restartCount++;
      void this.backoff(p, c).then(() => this.runContainer(p, c));
    });
  }

  private async backoff(p: RunningPod, c: Container): Promise<void> {
    const { initialMs, maxMs } = this.o.restartBackoff ?? { initialMs: 10_000, maxMs: 300_000 };
    c.backoffMs = c.backoffMs === 0 ? initialMs : Math.min(c.backoffMs * 2, maxMs);
    if (!("waiting" in c.state)) c.lastState = c.state;
    // An image that could not be pulled backs off as ImagePullBackOff, a bad config stays as it is, the rest is a crash loop.
    const reason = "waiting" in c.state ? c.state.waiting.reason : "";
    if (reason === "ErrImagePull" || reason === "ImagePullBackOff")
      c.state = {
        waiting: { reason: "ImagePullBackOff", message: "waiting" in c.state ? c.state.waiting.message : "" },
      };
    else if (reason !== "CreateContainerConfigError")
      c.state = {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off ${Math.round(c.backoffMs / 1000)}s restarting failed container=${c.spec.name} pod=${p.name}`,
        },
      };
    this.publish(p);
    await new Promise<void>((resolve) => {
      c.restartTimer = setTimeout(resolve, c.backoffMs);
    });
  }

  private probe(p: RunningPod, c: Container): void {
    const target = () =>
      c.pid1
        ? {
            podIP: p.ip,
            pid: c.pid1,
            ports: Object.fromEntries(
              (c.spec.ports ?? []).filter((x) => x.name).map((x) => [x.name!, x.containerPort]),
            ),
          }
        : undefined;
    const afterStartup = (): void => {
      c.started = true;
      if (c.spec.readinessProbe)
        c.stopProbes.push(
          scheduleProbe(c.spec.readinessProbe, target, (ok) => {
            c.ready = ok;
            this.publish(p);
          }),
        );
      else c.ready = true;
      if (c.spec.livenessProbe)
        c.stopProbes.push(
          scheduleProbe(c.spec.livenessProbe, target, (ok) => {
            if (!ok) this.restart(p, c, "liveness probe failed");
          }),
        );
      this.publish(p);
    };
    if (!c.spec.startupProbe) {
      afterStartup();
      return;
    }
    const stop = scheduleProbe(c.spec.startupProbe, target, (ok) => {
      stop();
      if (ok) afterStartup();
      else this.restart(p, c, "startup probe failed");
    });
    c.stopProbes.push(stop);
  }

  /** Kills a container (SIGTERM, then SIGKILL after the pod's grace); runContainer starts it again. */
  private restart(p: RunningPod, c: Container, why: string): void {
    const proc = c.proc;
    if (!proc || p.stopping) return;
    void writeFile(join(p.dir, "logs", `${c.spec.name}.log`), `[fake kubelet] ${why}: killing the container\n`, {
      flag: "a",
    });
    void this.terminate(c, Math.min(p.pod.spec?.terminationGracePeriodSeconds ?? 30, this.o.maxGraceSeconds ?? 30));
  }

  private async terminate(c: Container, graceSeconds: number): Promise<void> {
    const proc = c.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = c.exited!;
    if (c.pid1 && graceSeconds > 0) {
      try {
        process.kill(c.pid1, "SIGTERM");
      } catch {
        /* already gone */
      }
      const t = setTimeout(() => proc.kill("SIGKILL"), graceSeconds * 1000);
      await exited;
      clearTimeout(t);
      return;
    }
    proc.kill("SIGKILL"); // --kill-child: the container's PID 1, and with it every process in it
    await exited;
  }

  private async stopPod(p: RunningPod, graceSeconds: number): Promise<void> {
    for (const c of [...p.inits, ...p.containers]) {
      clearTimeout(c.restartTimer);
      for (const stop of c.stopProbes) stop();
    }
    await Promise.all([...p.inits, ...p.containers].map((c) => this.terminate(c, graceSeconds)));
    await p.release?.();
    await rm(join(p.dir, "volumes"), { recursive: true, force: true }).catch(() => undefined);
    this.pods.delete(p.uid);
  }

  /**
   * Pulls of `image` (as a container names it) fail until the returned function is called, as when
   * the node cannot reach its registry: a container that needs it waits in ErrImagePull, then
   * ImagePullBackOff, and starts at the first attempt after. Containers already running go on.
   */
  withholdImage(image: string): () => void {
    this.withheld.add(image);
    return () => void this.withheld.delete(image);
  }
  private readonly withheld = new Set<string>();

  private async spawnContainer(p: RunningPod, c: Container): Promise<ChildProcess | undefined> {
    if (this.withheld.has(c.spec.image)) {
      c.state = {
        waiting: {
          reason: "ErrImagePull",
          message: `failed to pull image "${c.spec.image}": the registry did not answer`,
        },
      };
      this.publish(p);
      return undefined;
    }
    const image =
      this.o.images[c.spec.image] ?? this.o.images[c.spec.image.replace(/(@sha256:[0-9a-f]+|:[^/:]+)$/, "")];
    if (!image) {
      c.state = {
        waiting: {
          reason: "ErrImagePull",
          message: `image ${c.spec.image} is not known to the fake kubelet (its images: ${Object.keys(this.o.images).join(", ")})`,
        },
      };
      this.publish(p);
      return undefined;
    }
    let env: Record<string, string>;
    let mounts: string[];
    try {
      env = this.environment(p, c);
      mounts = await this.mounts(p, c);
    } catch (err) {
      c.state = { waiting: { reason: "CreateContainerConfigError", message: (err as Error).message } };
      this.publish(p);
      return undefined;
    }
    // The image's entrypoint and cmd unless the container says otherwise (the documented rule).
    const argv = c.spec.command
      ? [...c.spec.command, ...(c.spec.args ?? [])]
      : [...image.entrypoint, ...(c.spec.args ?? image.cmd ?? [])];
    const workingDir = c.spec.workingDir ?? image.workingDir;
    // Written by the container's setup once its mounts are in place: only then is it running (an
    // exec before that saw the image's directories without their volumes).
    const setUp = join(p.dir, `.set-up-${c.spec.name}-${randomBytes(4).toString("hex")}`);
    const script = [
      `hostname ${quote(p.pod.spec?.hostname ?? p.name)}`,
      ...this.dnsMounts(p),
      ...mounts,
      ...(workingDir ? [`mkdir -p ${quote(workingDir)} && cd ${quote(workingDir)}`] : []),
      `: > ${quote(setUp)}`,
      'exec "$@"',
    ].join(" && ");
    const log = openSync(join(p.dir, "logs", `${c.spec.name}.log`), "a");
    const proc = spawn(
      "ip",
      [
        "netns",
        "exec",
        p.netns,
        "unshare",
        "--uts",
        "--mount",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        script,
        "sh",
        ...argv,
      ],
      {
        env,
        stdio: ["ignore", log, log],
      },
    );
    closeSync(log);
    proc.on("error", () => undefined);
    c.exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
    c.proc = proc;
    // ip netns exec becomes unshare; unshare forks the container's PID 1.
    for (let i = 0; i < 100 && !c.pid1 && proc.exitCode === null; i++) {
      const children = (await readFile(`/proc/${proc.pid}/task/${proc.pid}/children`, "utf8").catch(() => "")).trim();
      if (children) c.pid1 = Number(children.split(" ")[0]);
      else await new Promise((r) => setTimeout(r, 10));
    }
    const exited = (): boolean => proc.exitCode !== null || proc.signalCode !== null;
    while (!exited() && !existsSync(setUp)) await new Promise((r) => setTimeout(r, 10));
    await rm(setUp, { force: true });
    c.startedAt = now();
    if (!exited()) c.state = { running: { startedAt: c.startedAt } };
    this.publish(p);
    return proc;
  }

  /** The container's environment: what the pod says, resolved as the kubelet resolves it. */
  private environment(p: RunningPod, c: Container): Record<string, string> {
    const env: Record<string, string> = {
      PATH,
      HOSTNAME: p.pod.spec?.hostname ?? p.name,
      ...this.apiServerEnvironment(),
    };
    const fields = this.podFields(p);
    for (const e of c.spec.env ?? []) {
      if (e.value !== undefined) {
        env[e.name] = e.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string) => env[v] ?? m);
        continue;
      }
      const from = e.valueFrom;
      if (from?.fieldRef) {
        const v = fields[from.fieldRef.fieldPath];
        if (v === undefined)
          throw new Error(`env ${e.name}: fieldRef ${from.fieldRef.fieldPath} is not supported by the fake kubelet`);
        env[e.name] = v;
      } else if (from?.secretKeyRef || from?.configMapKeyRef) {
        const ref = (from.secretKeyRef ?? from.configMapKeyRef)!;
        const obj = this.host!.read(from.secretKeyRef ? "secrets" : "configmaps", p.namespace, ref.name);
        const raw = (obj?.data as Record<string, string> | undefined)?.[ref.key];
        if (raw === undefined) {
          if (ref.optional) continue;
          throw new Error(
            `couldn't find key ${ref.key} in ${from.secretKeyRef ? "Secret" : "ConfigMap"} ${p.namespace}/${ref.name}`,
          );
        }
        env[e.name] = from.secretKeyRef ? Buffer.from(String(raw), "base64").toString("utf8") : String(raw);
      }
    }
    return env;
  }

  /** What the downward API gives, by fieldPath. */
  private podFields(p: RunningPod): Record<string, string> {
    return {
      "metadata.name": p.name,
      "metadata.namespace": p.namespace,
      "metadata.uid": p.uid,
      "spec.nodeName": this.nodeName,
      "status.podIP": p.ip,
      "status.hostIP": this.network!.gateway,
      "spec.serviceAccountName": p.pod.spec?.serviceAccountName ?? "default",
    };
  }

  /** The pod's resolv.conf, hosts and nsswitch.conf (pod-dns.ts), written once its IP is known. */
  private async writeDnsFiles(p: RunningPod): Promise<void> {
    const files = podDnsFiles(p.pod, {
      ip: p.ip,
      nameserver: this.dns!.address,
      zone: this.o.clusterDomain ?? "cluster.local",
      nodeNsswitch: await readFile("/etc/nsswitch.conf", "utf8").catch(() => ""),
    });
    await mkdir(join(p.dir, "etc"), { recursive: true });
    for (const [name, text] of Object.entries(files))
      if (text !== undefined) await writeFile(join(p.dir, "etc", name), text);
    p.dnsFiles = Object.keys(files).filter((k) => files[k as keyof typeof files] !== undefined);
  }

  /** Shell steps that bind the pod's name-resolution files over the container's /etc ones. */
  private dnsMounts(p: RunningPod): string[] {
    return p.dnsFiles.map((f) => `mount --bind ${quote(join(p.dir, "etc", f))} /etc/${f}`);
  }

  /** Shell steps that bind each volume at its mountPath inside the container's mount namespace. */
  private async mounts(p: RunningPod, c: Container): Promise<string[]> {
    const steps: string[] = [];
    for (const m of c.spec.volumeMounts ?? []) {
      const src = join(await this.volume(p, m.name), m.subPath ?? "");
      await mkdir(src, { recursive: true });
      steps.push(`mkdir -p ${quote(m.mountPath)}`, `mount --bind ${quote(src)} ${quote(m.mountPath)}`);
      const forced = this.o.readOnlyMounts?.some((r) => r.container === c.spec.name && r.mountPath === m.mountPath);
      if (m.readOnly || forced) steps.push(`mount -o remount,bind,ro ${quote(m.mountPath)}`);
    }
    return steps;
  }

  /** A volume's directory on this machine, made (and filled, for secrets and config maps) once per pod. */
  private async volume(p: RunningPod, name: string): Promise<string> {
    const v = (p.pod.spec?.volumes ?? []).find((x: { name: string }) => x.name === name);
    if (!v) throw new Error(`volume ${name} is mounted but not declared in the pod`);
    if (v.persistentVolumeClaim) return this.claimVolume(p, v.persistentVolumeClaim.claimName);
    const dir = join(p.dir, "volumes", name);
    if (v.emptyDir) return dir;
    if (v.secret || v.configMap) {
      await this.fillConfigVolume(p, v, dir, true);
      return dir;
    }
    if (v.projected) {
      await this.fillProjectedVolume(p, v.projected, dir, true);
      return dir;
    }
    throw new Error(
      `volume ${name}: only emptyDir, secret, configMap, projected and persistentVolumeClaim are supported by the fake kubelet`,
    );
  }

  /**
   * The directory of the volume a claim is bound to (its host path, on this node), once it is bound:
   * as the kubelet, a pod whose claim is not bound yet waits (ContainerCreating), here up to a minute.
   */
  private async claimVolume(p: RunningPod, claimName: string): Promise<string> {
    for (let waited = 0; ; waited += 100) {
      const claim = this.host!.read("persistentvolumeclaims", p.namespace, claimName);
      if (!claim) throw new Error(`persistentvolumeclaim "${claimName}" not found`);
      const pv =
        claim.status?.phase === "Bound" && claim.spec?.volumeName
          ? this.host!.read("persistentvolumes", "", claim.spec.volumeName)
          : undefined;
      const path: string | undefined = pv?.spec?.hostPath?.path ?? pv?.spec?.local?.path;
      if (path) {
        if (!p.ownedClaims.has(claimName))
          p.ownedClaims.set(claimName, applyVolumeOwnership(path, p.pod.spec?.securityContext));
        await p.ownedClaims.get(claimName);
        return path;
      }
      if (waited >= 60_000) throw new Error(`persistentvolumeclaim "${claimName}" is not bound to a volume`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** `KUBERNETES_SERVICE_HOST` and `_PORT` (and the other variables of a Service) for the `kubernetes` Service, if there is one. */
  private apiServerEnvironment(): Record<string, string> {
    const svc = this.host!.read("services", "default", "kubernetes");
    if (!svc) return {};
    const port =
      ((svc.spec?.ports ?? []) as { name?: string; port: number }[]).find((x) => x.name === "https") ??
      svc.spec?.ports?.[0];
    let host: string | undefined = svc.spec?.clusterIP !== "None" ? svc.spec?.clusterIP : undefined;
    if (!host) {
      const slices = this.host!.list("endpointslices", "default").filter(
        (e) => e.metadata.labels?.["kubernetes.io/service-name"] === "kubernetes",
      );
      host = slices.flatMap((e) =>
        ((e.endpoints ?? []) as { addresses: string[]; conditions?: { ready?: boolean } }[])
          .filter((x) => x.conditions?.ready !== false)
          .flatMap((x) => x.addresses),
      )[0];
    }
    if (!host || !port) return {};
    return {
      KUBERNETES_SERVICE_HOST: host,
      KUBERNETES_SERVICE_PORT: String(port.port),
      KUBERNETES_SERVICE_PORT_HTTPS: String(port.port),
      KUBERNETES_PORT: `tcp://${host}:${port.port}`,
      [`KUBERNETES_PORT_${port.port}_TCP`]: `tcp://${host}:${port.port}`,
    };
  }

  /**
   * Writes a projected volume's files: its Secret, ConfigMap and downward API items, and its
   * ServiceAccount token (asked for again only when due, so every container of the pod and every
   * restart sees the same one until it rotates).
   */
  private async fillProjectedVolume(
    p: RunningPod,
    projected: { defaultMode?: number; sources?: ProjectedSource[] },
    dir: string,
    first: boolean,
  ): Promise<void> {
    const mode = projected.defaultMode ?? 0o644;
    const files: Record<string, Buffer> = {};
    for (const src of projected.sources ?? []) {
      if (src.serviceAccountToken) {
        const file = join(dir, src.serviceAccountToken.path);
        const had = p.tokens.get(file);
        const now = Date.now();
        if (had && now < had.issued + 0.8 * (had.expires - had.issued) && now < had.issued + 24 * 3600_000) continue;
        const { token, expirationTimestamp } = this.host!.requestToken(
          p.namespace,
          p.pod.spec?.serviceAccountName ?? "default",
          {
            ...(src.serviceAccountToken.audience ? { audiences: [src.serviceAccountToken.audience] } : {}),
            expirationSeconds: src.serviceAccountToken.expirationSeconds ?? 3600,
            boundObjectRef: { kind: "Pod", apiVersion: "v1", name: p.name, uid: p.uid },
          },
        );
        p.tokens.set(file, { issued: now, expires: Date.parse(expirationTimestamp) });
        files[src.serviceAccountToken.path] = Buffer.from(token);
      } else if (src.secret || src.configMap) {
        const secret = !!src.secret;
        const ref = (src.secret ?? src.configMap)!;
        const obj = this.host!.read(secret ? "secrets" : "configmaps", p.namespace, ref.name);
        if (!obj) {
          if (ref.optional || !first) continue; // deleted since: the last content stays
          throw new Error(`${secret ? "secret" : "configmap"} "${ref.name}" not found`);
        }
        const data = (obj.data ?? {}) as Record<string, string>;
        const items = ref.items ?? Object.keys(data).map((key) => ({ key, path: key }));
        for (const { key, path } of items) {
          if (data[key] === undefined) {
            if (ref.optional) continue;
            throw new Error(`${secret ? "secret" : "configmap"} "${ref.name}" has no key ${key}`);
          }
          files[path] = secret ? Buffer.from(data[key], "base64") : Buffer.from(data[key]);
        }
      } else if (src.downwardAPI) {
        for (const item of src.downwardAPI.items ?? []) {
          const v = this.podFields(p)[item.fieldRef?.fieldPath ?? ""];
          if (v === undefined)
            throw new Error(
              `projected downwardAPI ${item.path}: fieldRef ${item.fieldRef?.fieldPath ?? "(none)"} is not supported by the fake kubelet`,
            );
          files[item.path] = Buffer.from(v);
        }
      }
    }
    await mkdir(dir, { recursive: true });
    for (const [path, content] of Object.entries(files)) {
      if (
        !first &&
        (await readFile(join(dir, path)).then(
          (b) => b.equals(content),
          () => false,
        ))
      )
        continue;
      await mkdir(dirname(join(dir, path)), { recursive: true });
      const tmp = join(dirname(join(dir, path)), `.${basename(path)}.tmp`);
      await writeFile(tmp, content, { mode });
      await rename(tmp, join(dir, path));
    }
  }

  /**
   * Writes a Secret's or ConfigMap's keys as files in `dir` and removes files of keys it no longer
   * has. Each file is replaced by a rename, so a reader sees the old or the new content, never half.
   */
  private async fillConfigVolume(
    p: RunningPod,
    v: {
      secret?: { secretName: string; optional?: boolean; defaultMode?: number };
      configMap?: { name: string; optional?: boolean; defaultMode?: number };
    },
    dir: string,
    first: boolean,
  ): Promise<void> {
    const secret = !!v.secret;
    const source = (v.secret ?? v.configMap)!;
    const ref = v.secret ? v.secret.secretName : v.configMap!.name;
    const obj = this.host!.read(secret ? "secrets" : "configmaps", p.namespace, ref);
    if (!obj && !source.optional && first) throw new Error(`${secret ? "secret" : "configmap"} "${ref}" not found`);
    if (!obj && !first) return; // deleted since: the kubelet keeps the last content
    await mkdir(dir, { recursive: true });
    const mode = source.defaultMode ?? 0o644;
    const data = (obj?.data ?? {}) as Record<string, string>;
    for (const [key, value] of Object.entries(data)) {
      const content = secret ? Buffer.from(value, "base64") : Buffer.from(value);
      if (
        !first &&
        (await readFile(join(dir, key)).then(
          (b) => b.equals(content),
          () => false,
        ))
      )
        continue;
      await writeFile(join(dir, `.${key}.tmp`), content, { mode });
      await rename(join(dir, `.${key}.tmp`), join(dir, key));
    }
    if (!first)
      for (const f of await readdir(dir))
        if (!f.startsWith(".") && !(f in data)) await rm(join(dir, f), { force: true });
  }

  /** The periodic sync's part that refreshes mounted Secrets, ConfigMaps and projected volumes (tokens due to rotate) of running pods. */
  private async refreshConfigVolumes(): Promise<void> {
    for (const p of this.pods.values()) {
      if (p.stopping || !p.initialized) continue;
      for (const v of (p.pod.spec?.volumes ?? []) as {
        name: string;
        secret?: { secretName: string };
        configMap?: { name: string };
        projected?: { sources?: ProjectedSource[] };
      }[]) {
        if (v.secret || v.configMap)
          await this.fillConfigVolume(p, v, join(p.dir, "volumes", v.name), false).catch(() => undefined);
        else if (v.projected)
          await this.fillProjectedVolume(p, v.projected, join(p.dir, "volumes", v.name), false).catch(() => undefined);
      }
    }
  }

  private fail(p: RunningPod, message: string): void {
    for (const c of p.containers) c.state = { waiting: { reason: "CreateContainerError", message } };
    this.publish(p);
  }

  /** Writes the pod's status from what runs, once per turn of the event loop. */
  private publish(p: RunningPod): void {
    if (this.publishing.has(p.uid) || this.closed) return;
    this.publishing.add(p.uid);
    setImmediate(() => {
      this.publishing.delete(p.uid);
      if (!this.pods.has(p.uid)) return;
      this.host?.updatePodStatus(p.namespace, p.name, p.uid, (s) => {
        const allReady = p.initialized && p.containers.every((c) => c.ready);
        s.phase =
          p.initialized && p.containers.some((c) => "running" in c.state || c.restartCount > 0) ? "Running" : "Pending";
        s.hostIP = this.network!.gateway;
        s.hostIPs = [{ ip: this.network!.gateway }];
        if (p.ip) {
          s.podIP = p.ip;
          s.podIPs = [{ ip: p.ip }];
        }
        s.startTime = p.startTime;
        setCondition(s, "PodReadyToStartContainers", !!p.ip);
        setCondition(s, "Initialized", p.initialized, p.initialized ? undefined : "ContainersNotInitialized");
        setCondition(s, "ContainersReady", allReady, allReady ? undefined : "ContainersNotReady");
        setCondition(s, "Ready", allReady, allReady ? undefined : "ContainersNotReady");
        const status = (c: Container) => ({
          name: c.spec.name,
          image: c.spec.image,
          imageID: "",
          containerID: `fake://${p.uid}/${c.spec.name}`,
          ready: c.init ? "terminated" in c.state && c.state.terminated.exitCode === 0 : c.ready,
          restartCount: c.restartCount,
          started: c.init ? false : c.started,
          state: c.state,
          ...(c.lastState ? { lastState: c.lastState } : {}),
        });
        s.initContainerStatuses = p.inits.map(status);
        s.containerStatuses = p.containers.map(status);
      });
    });
  }
}
