import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { kubernetes } from "../substrates";
import type { ControllerConnection, ReplicaCount } from "./connection";
import { TYPE_MODULE } from "./secrets";
import { shims } from "./shim";
import { waitSeconds } from "./timeouts";

export interface KubernetesControllerArgs {
  /** The controller's name: its StatefulSet's and the prefix of its other objects. @default the resource name */
  name?: string;
  /** @default "steward" */
  namespace?: string;
  /** @default 1; 3, 5 or 7 for high availability. The controller grows itself to it, one pod at a time. */
  replicas?: pulumi.Input<ReplicaCount>;
  /** The controller image (built from images/controller and pushed to your registry). @default steward/controller:<version> */
  image?: string;
  /** The agent image kubernetes models' pods run. @default steward/agent:<version> */
  agentImage?: string;
  /** Size of each replica's claim. @default "2Gi" */
  dataSize?: string;
  storageClassName?: string;
  /** The kubeconfig the provider process reaches the cluster with, to finish the bootstrap (kept secret). */
  kubeconfig: pulumi.Input<string>;
  context?: pulumi.Input<string>;
  /** The API server as the controller's pods reach it, in `clusterCredential` (for models on this cluster). @default "https://kubernetes.default.svc" */
  inClusterServer?: pulumi.Input<string>;
  /** How clients outside the cluster reach the controller (a load balancer's or node port's HOST:PORT); default the pods' IPs. */
  apiAddresses?: pulumi.Input<pulumi.Input<string>[]>;
  replaceAfterSeconds?: pulumi.Input<number>;
  /** How long to wait for every replica. @default `customTimeouts.create`, else 900 */
  timeoutSeconds?: pulumi.Input<number>;
}

/**
 * A highly available controller on Kubernetes, made of `@pulumi/kubernetes` resources (so `pulumi
 * preview` shows the StatefulSet and the rest: substrates/kubernetes/controller-pods.ts), a seed
 * (CA, admin password) made once and kept secret, and a last step that waits for the controller and
 * outputs its `connection` (secret) and `clusterCredential`, the name under which the controller
 * holds this cluster, for a kubernetes `Model` on the same cluster.
 *
 * The controller scales its own StatefulSet (Pulumi ignores `spec.replicas` after creation) and
 * writes its enrolment Secret's tokens (ignored too); a replica whose pod comes back with an empty
 * volume is replaced by the controller itself.
 */
export class KubernetesController extends pulumi.ComponentResource {
  declare readonly connection: pulumi.Output<ControllerConnection>;
  declare readonly clusterCredential: pulumi.Output<string>;
  readonly statefulSet: k8s.apps.v1.StatefulSet;
  readonly namespace: k8s.core.v1.Namespace;

  constructor(name: string, args: KubernetesControllerArgs, opts?: pulumi.ComponentResourceOptions) {
    super(`${TYPE_MODULE}:index:KubernetesController`, name, {}, opts);
    const ctl = args.name ?? name;
    const ns = args.namespace ?? "steward";
    const child = { parent: this };
    const seed = new ControllerSeed(`${name}-seed`, ctl, child);
    const spec: kubernetes.ControllerPodsSpec = {
      name: ctl,
      namespace: ns,
      replicas: 1,
      voters: 1,
      image: args.image ?? kubernetes.DEFAULT_CONTROLLER_IMAGE,
      ...(args.dataSize ? { dataSize: args.dataSize } : {}),
      ...(args.storageClassName ? { storageClassName: args.storageClassName } : {}),
    };
    // Typed loosely here: the fake API server checks these same manifests against the official schema in the tests.
    const [nsManifest, serviceAccount, role, binding, peers, client, budget, set] = kubernetes.controllerManifests(
      spec,
    ) as never[];
    this.namespace = new k8s.core.v1.Namespace(`${name}-namespace`, nsManifest!, child);
    const inNs = { parent: this, dependsOn: [this.namespace] };
    const made = pulumi
      .all([seed.uuid, seed.caCert, seed.caKey, seed.adminPassword])
      .apply(([uuid, caCert, caKey, adminPassword]) => ({ uuid, caCert, caKey, adminPassword }));
    const first = made.apply((s) =>
      JSON.stringify({
        name: ctl,
        ...s,
        address: kubernetes.replicaDnsName(spec, 0),
        ...(args.agentImage ? { agentImage: args.agentImage } : {}),
      }),
    );
    const seedSecret = new k8s.core.v1.Secret(
      `${name}-seed`,
      {
        metadata: { name: kubernetes.controllerSeedSecretName(ctl), namespace: ns },
        type: "Opaque",
        stringData: { [kubernetes.SEED_KEY]: pulumi.secret(first) },
      },
      inNs,
    );
    // The leader writes replicas' enrolment tokens and the bootstrapped mark here.
    const enrolSecret = new k8s.core.v1.Secret(
      `${name}-enrol`,
      {
        metadata: { name: kubernetes.controllerEnrolSecretName(ctl), namespace: ns },
        type: "Opaque",
        stringData: { "ca.crt": seed.caCert },
      },
      { ...inNs, ignoreChanges: ["data", "stringData"] },
    );
    const objects = [
      new k8s.core.v1.ServiceAccount(`${name}-account`, serviceAccount!, inNs),
      new k8s.rbac.v1.Role(`${name}-role`, role!, inNs),
      new k8s.rbac.v1.RoleBinding(`${name}-binding`, binding!, inNs),
      new k8s.core.v1.Service(`${name}-peers`, peers!, inNs),
      new k8s.core.v1.Service(`${name}-api`, client!, inNs),
      // A majority of the voters wanted stays up through voluntary disruptions (drains, upgrades).
      new k8s.policy.v1.PodDisruptionBudget(
        `${name}-budget`,
        {
          ...(budget as { spec: object }),
          spec: {
            ...(budget as { spec: object }).spec,
            minAvailable: pulumi.output(args.replicas ?? 1).apply((r) => Math.floor(r / 2) + 1),
          },
        },
        inNs,
      ),
    ];
    // The controller grows its StatefulSet itself; Pulumi must not scale it back to one pod.
    this.statefulSet = new k8s.apps.v1.StatefulSet(`${name}-replicas`, set!, {
      ...inNs,
      dependsOn: [this.namespace, seedSecret, enrolSecret, ...objects],
      ignoreChanges: ["spec.replicas"],
    });
    const ready = new ControllerReady(
      `${name}-ready`,
      {
        name: ctl,
        namespace: ns,
        replicas: args.replicas ?? 1,
        kubeconfig: pulumi.secret(args.kubeconfig),
        context: args.context,
        inClusterServer: args.inClusterServer,
        apiAddresses: args.apiAddresses,
        replaceAfterSeconds: args.replaceAfterSeconds,
        timeoutSeconds: waitSeconds(args.timeoutSeconds, opts, ["create", "update"], 900),
        seed: pulumi.secret(made),
      },
      { parent: this, dependsOn: [this.statefulSet] },
    );
    this.connection = pulumi.secret(ready.connection);
    this.clusterCredential = ready.clusterCredential;
    this.registerOutputs({ connection: this.connection, clusterCredential: this.clusterCredential });
  }
}

/** The controller's CA, admin password and uuid, made once (impl/kubernetesSeed-provider.ts). */
class ControllerSeed extends pulumi.dynamic.Resource {
  declare readonly uuid: pulumi.Output<string>;
  declare readonly caCert: pulumi.Output<string>;
  declare readonly caKey: pulumi.Output<string>;
  declare readonly adminPassword: pulumi.Output<string>;
  constructor(name: string, controller: string, opts: pulumi.CustomResourceOptions) {
    super(
      shims.kubernetesSeed,
      name,
      { name: controller, uuid: undefined, caCert: undefined, caKey: undefined, adminPassword: undefined },
      { ...opts, additionalSecretOutputs: ["caKey", "adminPassword"] },
      TYPE_MODULE,
      "KubernetesControllerSeed",
    );
  }
}

/** Waits for the controller, grows it, outputs its connection (impl/kubernetesController-provider.ts). */
class ControllerReady extends pulumi.dynamic.Resource {
  declare readonly connection: pulumi.Output<ControllerConnection>;
  declare readonly clusterCredential: pulumi.Output<string>;
  constructor(name: string, props: Record<string, pulumi.Input<unknown>>, opts: pulumi.CustomResourceOptions) {
    super(
      shims.kubernetesController,
      name,
      { ...props, connection: undefined, clusterCredential: undefined },
      { ...opts, additionalSecretOutputs: ["connection", "seed", "kubeconfig"] },
      TYPE_MODULE,
      "KubernetesControllerReady",
    );
  }
}
