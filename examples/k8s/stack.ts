/**
 * The Kubernetes stack: a 3-replica controller as a StatefulSet on the cluster (KubernetesController:
 * `@pulumi/kubernetes` resources, so `pulumi preview` shows them), a kubernetes model on the same
 * cluster (the controller holds the cluster as `clusterCredential`), and in it `web` (static-site:
 * nginx in a workload container) integrated with `checker` (http-checker), and `db` (peer-cluster: pods turn ready only once the
 * cluster is assembled). One `pulumi up`: the controller waits for its quorum before the model is made.
 */
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { Application, Integration, Model } from "steward";
import { KubernetesController } from "steward/kubernetes";

export interface K8sStackSettings {
  /** The kubeconfig Pulumi reaches the cluster with: a secret (README.md). */
  kubeconfig: pulumi.Input<string>;
  context?: string;
  /** The controller and agent images, pushed to a registry the cluster pulls from (images/, README.md). */
  controllerImage: string;
  agentImage: string;
  /** The controller's namespace. @default "steward" */
  namespace?: string;
  /** How this machine reaches the controller: a LoadBalancer's or node port's HOST:PORT (default the pods' IPs). */
  apiAddresses?: string[];
  /** The API server as pods reach it. @default https://kubernetes.default.svc */
  inClusterServer?: string;
  /** Where the operators are (the package's operators/ by default). */
  operatorsDir: string;
  webUnits?: number;
}

export function k8sStack(s: K8sStackSettings) {
  const provider = new k8s.Provider("cluster", {
    kubeconfig: s.kubeconfig,
    ...(s.context ? { context: s.context } : {}),
  });
  const controller = new KubernetesController(
    "controller",
    {
      replicas: 3,
      namespace: s.namespace ?? "steward",
      image: s.controllerImage,
      agentImage: s.agentImage,
      kubeconfig: s.kubeconfig,
      ...(s.context ? { context: s.context } : {}),
      ...(s.apiAddresses ? { apiAddresses: s.apiAddresses } : {}),
      ...(s.inClusterServer ? { inClusterServer: s.inClusterServer } : {}),
    },
    { providers: { kubernetes: provider } },
  );
  const model = new Model("shop", {
    connection: controller.connection,
    substrate: "kubernetes",
    credential: controller.clusterCredential,
  });
  // nginx in a workload container, driven through the supervisor Steward puts in front of it.
  const web = new Application("web", {
    model,
    operator: join(s.operatorsDir, "static-site"),
    units: s.webUnits ?? 2,
    config: { greeting: "Hello from Kubernetes" },
  });
  const checker = new Application("checker", { model, operator: join(s.operatorsDir, "http-checker"), units: 1 });
  const integration = new Integration("web-checker", {
    endpoints: [
      { application: web, endpoint: "website" },
      { application: checker, endpoint: "upstream" },
    ],
  });
  const db = new Application("db", {
    model,
    operator: join(s.operatorsDir, "peer-cluster"),
    units: 3,
    config: { size: 3 },
  });
  return {
    connection: controller.connection,
    namespace: controller.namespace.metadata.name,
    webUnits: web.unitNames,
    checkerUnits: checker.unitNames,
    dbUnits: db.unitNames,
    resources: { provider, controller, model, web, checker, integration, db },
  };
}
