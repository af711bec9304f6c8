/**
 * A Kubernetes "cluster" for tests and benchmarks of the kubernetes substrate: the FAKE API server
 * with the FAKE process kubelet (pods are processes in network namespaces on a bridge), and a real
 * controller listening on the bridge's address so pods reach it, with the cluster registered as the
 * `lab` credential (what `steward add-k8s lab` stores). The agent image maps to the agent bundle
 * (its init container mode places the workload supervisor); the test workload image to a command
 * that only says it was not replaced (the supervisor is a workload container's entrypoint).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AGENT_BUNDLE,
  AGENT_NODE_FLAGS,
  CONTROLLER_BUNDLE,
  CONTROLLER_NODE_FLAGS,
  DEFAULT_AGENT_IMAGE,
} from "../../../controller";
import { kubernetes } from "../../../substrates";
import type { TestController } from "../controller";
import { startTestController } from "../controller";
import { FakeKubeApi } from "./fake-kube-api";
import type { FakeKubeApiOptions } from "./fake-kube-api";
import { ProcessKubelet } from "./process-kubelet";
import type { ImageSpec, ProcessKubeletOptions } from "./process-kubelet";

export interface KubeLab {
  api: FakeKubeApi;
  kubelet: ProcessKubelet;
  /** The product's own client, for what the test reads of the cluster. */
  kube: kubernetes.KubeApi;
  tc: TestController;
  close(): Promise<void>;
}

/** Probes short enough for tests (the defaults are Juju's: liveness every 5 s). */
export const LAB_PROBES: kubernetes.PodProbeSettings = {
  liveness: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 3 },
  readiness: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 1 },
  startup: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 60 },
};

/** A workload image for test operators' `containers:` (any command: the supervisor replaces its entrypoint). */
export const LAB_WORKLOAD_IMAGE = "steward-test/workload";

/**
 * @param o.images more images the kubelet runs (a test's workload images);
 * @param o.readOnlyMounts mounts the kubelet makes read-only (ProcessKubeletOptions.readOnlyMounts).
 */
export async function startKubeLab(
  o: { images?: Record<string, ImageSpec>; readOnlyMounts?: ProcessKubeletOptions["readOnlyMounts"] } = {},
): Promise<KubeLab> {
  const dir = await mkdtemp(join(tmpdir(), "steward-kube-lab-"));
  const image = DEFAULT_AGENT_IMAGE.replace(/:[^:/]+$/, "");
  const kubelet = new ProcessKubelet({
    dataDir: join(dir, "node"),
    images: {
      [image]: { entrypoint: [process.execPath, ...AGENT_NODE_FLAGS, AGENT_BUNDLE.main] },
      [LAB_WORKLOAD_IMAGE]: {
        entrypoint: [
          "/bin/sh",
          "-c",
          "echo the workload image's own entrypoint ran: the supervisor should have replaced it >&2; exit 1",
        ],
      },
      ...o.images,
    },
    restartBackoff: { initialMs: 500, maxMs: 5000 },
    maxGraceSeconds: 10,
    ...(o.readOnlyMounts ? { readOnlyMounts: o.readOnlyMounts } : {}),
  });
  let api: FakeKubeApi | undefined;
  let tc: TestController | undefined;
  try {
    api = await FakeKubeApi.start({ kubelet });
    tc = await startTestController({
      listenHost: kubelet.gateway,
      kubernetes: { pollIntervalMs: 500, probes: LAB_PROBES },
    });
    await tc.admin.putCredential("lab", "kubernetes", { kubeconfig: api.kubeconfig() });
  } catch (err) {
    await tc?.close();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const kube = new kubernetes.KubeApi(kubernetes.parseKubeconfig(api.kubeconfig()));
  const started = { api, tc };
  return {
    api,
    kubelet,
    kube,
    tc,
    async close() {
      kube.close();
      await started.tc.close();
      await started.api.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Makes the fake API server reachable from pods as `kubernetes.default.svc` (where a pod finds its
 * cluster's API server) and by `KUBERNETES_SERVICE_HOST`/`_PORT`: a headless Service `kubernetes`
 * in `default` whose EndpointSlice holds the node's bridge address and the server's own port (the
 * fake routes no cluster IPs, so no port is translated either). The server must listen on 0.0.0.0.
 */
export async function publishApiServer(kube: kubernetes.KubeApi, gateway: string, port: number): Promise<void> {
  const R = kubernetes.KUBE_RESOURCES;
  if (!(await kube.find(R.namespaces, "default")))
    await kube.create(R.namespaces, { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
  await kube.create(R.services, {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "kubernetes", namespace: "default" },
    spec: { clusterIP: "None", ports: [{ name: "https", port }] },
  });
  await kube.create(R.endpointSlices, {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: { "kubernetes.io/service-name": "kubernetes", "endpointslice.kubernetes.io/managed-by": "fake-kube-api" },
    },
    addressType: "IPv4",
    endpoints: [{ addresses: [gateway], conditions: { ready: true } }],
    ports: [{ name: "https", port, protocol: "TCP" }],
  });
}

/** How long ServiceAccount tokens live in {@link startKubeCluster}: pods' tokens rotate about every 48 s. */
export const CLUSTER_TOKEN_SECONDS = 60;

export interface KubeCluster {
  api: FakeKubeApi;
  kubelet: ProcessKubelet;
  kube: kubernetes.KubeApi;
  close(): Promise<void>;
}

/** What `steward/controller:<tag>` runs when that tag is another release's (an exact `name:tag` key wins over the untagged one). */
export function controllerImageOf(bundle: string): ImageSpec {
  return { entrypoint: [process.execPath, ...CONTROLLER_NODE_FLAGS, bundle] };
}

/**
 * The fake cluster alone, for a controller that runs in it (`steward bootstrap kubernetes:`): the
 * controller and agent images map to their bundles (any tag: this build; `images` adds exact
 * `name:tag` keys, e.g. a newer release's controller for an upgrade), the API server is reachable from pods as
 * `kubernetes.default.svc` ({@link FakeKubeApi.inClusterUrl}) and by the environment, mounted
 * Secrets refresh every second, and ServiceAccount tokens live a minute (a real cluster's live an
 * hour): a pod's client that does not read its token again as it rotates is refused within the test.
 * `tokens` as the server's (the first is the one {@link KubeCluster.kube} uses): several users, to
 * tell in `api.requests` who did what.
 */
export async function startKubeCluster(
  o: { tokens?: FakeKubeApiOptions["tokens"]; images?: Record<string, ImageSpec> } = {},
): Promise<KubeCluster> {
  const dir = await mkdtemp(join(tmpdir(), "steward-kube-cluster-"));
  const untagged = (image: string): string => image.replace(/:[^:/]+$/, "");
  const kubelet = new ProcessKubelet({
    dataDir: join(dir, "node"),
    images: {
      [untagged(kubernetes.DEFAULT_CONTROLLER_IMAGE)]: {
        entrypoint: [process.execPath, ...CONTROLLER_NODE_FLAGS, CONTROLLER_BUNDLE],
      },
      [untagged(DEFAULT_AGENT_IMAGE)]: { entrypoint: [process.execPath, ...AGENT_NODE_FLAGS, AGENT_BUNDLE.main] },
      ...o.images,
    },
    restartBackoff: { initialMs: 500, maxMs: 5000 },
    maxGraceSeconds: 10,
    secretRefreshMs: 1000,
  });
  let api: FakeKubeApi | undefined;
  try {
    api = await FakeKubeApi.start({
      kubelet,
      listen: "0.0.0.0",
      serviceAccountTokenMaxSeconds: CLUSTER_TOKEN_SECONDS,
      ...(o.tokens ? { tokens: o.tokens } : {}),
    });
    const kube = new kubernetes.KubeApi(kubernetes.parseKubeconfig(api.kubeconfig()));
    await publishApiServer(kube, kubelet.gateway, Number(new URL(api.url).port));
    const started = api;
    return {
      api,
      kubelet,
      kube,
      async close() {
        kube.close();
        await started.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
