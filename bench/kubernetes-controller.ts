/**
 * A controller on Kubernetes, on the FAKE API server and process kubelet (test/harness/kube):
 * `bootstrap kubernetes:` to three healthy voters, then, `runs` times, a replica's pod deleted with
 * its claim (its node and disk lost): how long from the new pod running until three healthy voters
 * again (target ≤ 60 s), and from the deletion.
 */
import type { ClusterInfo } from "../api";
import { ControllerClient } from "../api";
import { kubernetes } from "../substrates";
import { eventually } from "../test/harness/eventually";
import { startKubeCluster } from "../test/harness/kube/lab";
import type { BenchOptions } from "./util";
import { median, report } from "./util";

const R = kubernetes.KUBE_RESOURCES;
const NS = "steward";

/** `runs`: lost volumes, one after another (default 3). */
export async function benchKubernetesController(o: BenchOptions & { runs?: number } = {}): Promise<void> {
  const runs = o.runs ?? 3;
  const cluster = await startKubeCluster();
  const { api, kube } = cluster;
  let client: ControllerClient | undefined;
  try {
    let t0 = performance.now();
    const entry = await kubernetes.bootstrapOnKubernetes({
      name: "ctl",
      namespace: NS,
      replicas: 3,
      image: kubernetes.DEFAULT_CONTROLLER_IMAGE,
      connection: kubernetes.parseKubeconfig(api.kubeconfig()),
      replaceAfterSeconds: 600,
      timeoutMs: 300_000,
      progress: () => undefined,
    });
    const bootstrapMs = performance.now() - t0;
    const healthy = async (): Promise<ClusterInfo | undefined> => {
      const pods = (await kube.list(R.pods, { namespace: NS })).items.filter((p) => p.status?.podIP);
      client?.close();
      client = new ControllerClient({
        addresses: pods.map((p) => `${p.status!.podIP}:${kubernetes.CONTROLLER_API_PORT}`),
        caCert: entry.caCert,
        user: "admin",
        password: entry.adminPassword,
        timeoutMs: 3000,
      });
      const c = (await client.controllerInfo().catch(() => undefined))?.cluster;
      return c && c.members.filter((m) => m.hasVote && m.present).length === 3 && !c.members.some((m) => m.learner)
        ? c
        : undefined;
    };
    await eventually("3 healthy voters", healthy, 120_000, 200);
    // The keeper's hourly damper (2 by default) would hold back the third replacement in a row.
    await client!.enableHa({ replicas: 3, maxReplacementsPerHour: runs + 1 });
    const fromRunning: number[] = [];
    const fromDeletion: number[] = [];
    for (let i = 0; i < runs; i++) {
      const pod = `ctl-${(i % 2) + 1}`;
      const old = await kube.get(R.pods, pod, { namespace: NS });
      t0 = performance.now();
      await kube.delete(R.persistentVolumeClaims, `data-${pod}`, { namespace: NS });
      await kube.delete(R.pods, pod, { namespace: NS });
      const running = await eventually(
        `${pod} running again`,
        async () => {
          const p = await kube.find(R.pods, pod, { namespace: NS });
          return p && p.metadata?.uid !== old.metadata?.uid && p.status?.phase === "Running"
            ? performance.now()
            : undefined;
        },
        120_000,
        100,
      );
      await eventually("3 healthy voters again", healthy, 180_000, 200).catch(async (err: unknown) => {
        const c = (await client?.controllerInfo().catch(() => undefined))?.cluster;
        throw new Error(
          `${(err as Error).message} (run ${i + 1}, ${pod}); the quorum keeper: ${c?.keeper.message ?? "no answer"}`,
        );
      });
      fromRunning.push(performance.now() - running);
      fromDeletion.push(performance.now() - t0);
    }
    report(`kubernetes controller (fake API server and kubelet; 3 replicas, ${runs} lost volumes)`, {
      "bootstrap → 3 healthy voters (s)": bootstrapMs / 1000,
      "lost volume: pod running → 3 healthy voters, median (s)": median(fromRunning) / 1000,
      "lost volume: pod running → 3 healthy voters, worst (s)": Math.max(...fromRunning) / 1000,
      "lost volume: deleted → 3 healthy voters, median (s)": median(fromDeletion) / 1000,
    });
  } finally {
    client?.close();
    await cluster.close();
  }
}
