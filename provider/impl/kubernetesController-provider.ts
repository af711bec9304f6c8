/**
 * The KubernetesController component's last step, after its Kubernetes objects exist: waits for pod
 * 0 to serve, marks the cluster bootstrapped (no pod uses the seed again), stores the cluster in the
 * controller (its API server as pods reach it) as where replicas come from, grows to `replicas`
 * voters and outputs the connection (secret). A larger `replicas` grows it (enable-ha); smaller is
 * refused. Deleting it changes nothing: the component's objects go with their own resources (the
 * replicas' claims are kept, as the StatefulSet's retention policy says).
 */
import { waitForVoters } from "../../api/core";
import { kubernetes } from "../../substrates";
import type { ControllerConnection } from "../connection";
import { REPLICA_COUNTS } from "../connection";
import { OWN_PODS_KIND } from "../substrate-args";
import { Failures } from "./checks";
import { clientFor } from "./session";

export interface KubernetesControllerInputs {
  name: string;
  namespace: string;
  replicas: number;
  /** How the provider process reaches the cluster (secret). */
  kubeconfig: string;
  context?: string;
  inClusterServer?: string;
  apiAddresses?: string[];
  replaceAfterSeconds?: number;
  timeoutSeconds: number;
  seed: kubernetes.KubernetesControllerSeed;
}
export interface KubernetesControllerOutputs extends KubernetesControllerInputs {
  connection: ControllerConnection;
  clusterCredential: string;
}

export const kubernetesControllerProvider = {
  async check(olds: Partial<KubernetesControllerInputs>, news: KubernetesControllerInputs) {
    const f = new Failures();
    f.name("name", news.name, "controller name");
    f.name("namespace", news.namespace, "namespace");
    f.oneOf("replicas", news.replicas, REPLICA_COUNTS, " (an odd number of voters: 1, 3, 5 or 7)");
    if (typeof olds.replicas === "number" && typeof news.replicas === "number" && news.replicas < olds.replicas)
      f.add("replicas", `the controller has ${olds.replicas} replicas; shrinking is not supported`);
    if (typeof news.kubeconfig === "string") {
      try {
        kubernetes.parseKubeconfig(news.kubeconfig, news.context ? { context: news.context } : {});
      } catch (err) {
        f.add("kubeconfig", (err as Error).message);
      }
    }
    for (const a of news.apiAddresses ?? [])
      if (typeof a === "string" && !/^[^\s:]+:\d{1,5}$/.test(a)) f.add("apiAddresses", `${a}: give HOST:PORT`);
    f.wholeNumber("timeoutSeconds", news.timeoutSeconds, 10, 86400);
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: KubernetesControllerOutputs, news: KubernetesControllerInputs) {
    const replaces = ["name", "namespace"].filter((k) => olds[k as "name"] !== news[k as "name"]);
    if (olds.seed.uuid !== news.seed.uuid) replaces.push("seed");
    const changes =
      replaces.length > 0 ||
      olds.replicas !== news.replicas ||
      olds.kubeconfig !== news.kubeconfig ||
      olds.context !== news.context ||
      olds.inClusterServer !== news.inClusterServer ||
      JSON.stringify(olds.apiAddresses ?? []) !== JSON.stringify(news.apiAddresses ?? []) ||
      olds.replaceAfterSeconds !== news.replaceAfterSeconds;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: KubernetesControllerInputs) {
    const connection = kubernetes.parseKubeconfig(inputs.kubeconfig, inputs.context ? { context: inputs.context } : {});
    const api = new kubernetes.KubeApi(connection);
    try {
      const access = await kubernetes.finishKubernetesBootstrap(
        {
          name: inputs.name,
          namespace: inputs.namespace,
          replicas: inputs.replicas,
          timeoutMs: inputs.timeoutSeconds * 1000,
          progress: () => undefined,
          ...(inputs.apiAddresses?.length ? { apiAddresses: inputs.apiAddresses } : {}),
          ...(inputs.replaceAfterSeconds ? { replaceAfterSeconds: inputs.replaceAfterSeconds } : {}),
        },
        inputs.seed,
        api,
      );
      const controller: ControllerConnection = {
        addresses: access.addresses,
        caCert: access.caCert,
        user: "admin",
        password: access.adminPassword,
      };
      // For a kubernetes Model on this same cluster, registered as `steward add-k8s` would register
      // it: the user's credential, at the API server as the controller's pods reach it. (The
      // controller itself manages its StatefulSet as its pods' ServiceAccount, not with this.)
      const clusterCredential = `${inputs.name}-cluster`;
      const inCluster = new kubernetes.KubeConnection({
        server: inputs.inClusterServer ?? "https://kubernetes.default.svc",
        credential: connection.credential(),
        namespace: inputs.namespace,
        ...(connection.caCert ? { caCert: connection.caCert } : {}),
        insecure: connection.insecure,
        context: connection.context,
      });
      const client = clientFor(controller);
      try {
        await client.putCredential(
          clusterCredential,
          OWN_PODS_KIND,
          kubernetes.credentialOfConnection(inCluster),
          true,
        );
      } finally {
        client.close();
      }
      const outs: KubernetesControllerOutputs = { ...inputs, connection: controller, clusterCredential };
      return { id: `${inputs.namespace}/${inputs.name}`, outs };
    } finally {
      api.close();
    }
  },

  async read(id: string, props: KubernetesControllerOutputs) {
    const client = clientFor(props.connection);
    try {
      const info = await client.controllerInfo();
      // Addresses only when the user gave none (the pods' IPs change as pods are made again).
      return {
        id,
        props: props.apiAddresses?.length
          ? props
          : { ...props, connection: { ...props.connection, addresses: info.addresses } },
      };
    } finally {
      client.close();
    }
  },

  async update(_id: string, olds: KubernetesControllerOutputs, news: KubernetesControllerInputs) {
    const connection = { ...olds.connection, ...(news.apiAddresses?.length ? { addresses: news.apiAddresses } : {}) };
    if (news.replicas > olds.replicas || news.replaceAfterSeconds !== olds.replaceAfterSeconds) {
      const client = clientFor(connection);
      try {
        await client.enableHa({
          replicas: news.replicas,
          ...(news.replaceAfterSeconds ? { replaceAfterSeconds: news.replaceAfterSeconds } : {}),
        });
        await waitForVoters(client, news.replicas, news.timeoutSeconds * 1000);
      } finally {
        client.close();
      }
    }
    return {
      outs: { ...news, connection, clusterCredential: olds.clusterCredential } satisfies KubernetesControllerOutputs,
    };
  },

  async delete() {
    /* the component's Kubernetes resources are deleted by Pulumi; claims are kept */
  },
};
