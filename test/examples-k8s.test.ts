/**
 * examples/k8s under Pulumi's mocks: the KubernetesController component's `@pulumi/kubernetes`
 * resources and their wiring (the StatefulSet governed by the peers Service, mounting the seed and
 * enrolment Secrets, a budget keeping a majority of three, the controller scaling itself), every
 * manifest checked against the official Kubernetes schema (as the fake API server checks what the
 * tests create), secrets kept secret, and the kubernetes model made on the cluster the controller holds.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { readOperatorDir, validateBundle } from "../api";
import { k8sStack } from "../examples/k8s/stack";
import { KINDS } from "./harness/kube";
import { validateSchema } from "./harness/kube/kinds";
import { SECRET_SIG, unwrapSecrets } from "./harness/pulumi-engine";

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, any>;
  id: string;
  outputs: Record<string, unknown>;
}
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const KUBECONFIG =
  "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters: [{name: lab, cluster: {server: 'https://203.0.113.5:6443'}}]\nusers: [{name: lab, user: {token: not-a-real-token}}]\ncontexts: [{name: lab, context: {cluster: lab, user: lab}}]\n";

async function mockCluster(): Promise<Registered[]> {
  const registered: Registered[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, any>;
        const outs: Record<string, unknown> = { ...inputs };
        let id = `${args.name}-id`;
        const kind = args.type.split(":").pop()!;
        if (kind === "KubernetesControllerSeed") {
          id = "9d1c2b3a-0000-4e5f-8a9b-0c1d2e3f4a5b";
          Object.assign(outs, {
            uuid: id,
            caCert: CA,
            caKey: "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----\n",
            adminPassword: "generated",
          });
        } else if (kind === "KubernetesControllerReady")
          Object.assign(outs, {
            connection: { addresses: ["203.0.113.10:17070"], caCert: CA, user: "admin", password: "generated" },
            clusterCredential: `${inputs.name}-cluster`,
          });
        else if (kind === "Model") {
          id = "5b0e6f9c-1111-4a2b-8c3d-0e1f2a3b4c5d";
          outs.uuid = id;
        } else if (kind === "Application")
          Object.assign(outs, {
            uid: `uid-${args.name}`,
            unitNames: Array.from({ length: Number(inputs.units) }, (_, i) => `${args.name}/${i}`),
          });
        else if (kind === "Integration") Object.assign(outs, { integrationId: 3, interface: "http" });
        registered.push({ type: args.type, name: args.name, inputs, id, outputs: outs });
        return { id, state: outs };
      },
      call: (args) => {
        throw new Error(`unexpected invoke ${args.token}`);
      },
    },
    "steward-k8s",
    "test",
    false,
  );
  return registered;
}

async function settle(out: { resources: Record<string, pulumi.Resource> } & Record<string, unknown>): Promise<void> {
  const outputs = Object.values(out).filter((v) => pulumi.Output.isInstance(v)) as pulumi.Output<unknown>[];
  const ids = Object.values(out.resources)
    .filter((r): r is pulumi.CustomResource => pulumi.CustomResource.isInstance(r))
    .map((r) => r.id);
  await new Promise<void>((resolve) => pulumi.all([...outputs, ...ids]).apply(() => resolve()));
  await new Promise((r) => setTimeout(r, 200));
}

const plain = (v: unknown): any => unwrapSecrets(v);

test.serial(
  "examples/k8s: the controller's Kubernetes objects, valid and wired; a kubernetes model on the cluster it holds",
  async (t) => {
    const registered = await mockCluster();
    const out = k8sStack({
      kubeconfig: pulumi.secret(KUBECONFIG),
      controllerImage: "registry.example.com/steward/controller:0.1.0",
      agentImage: "registry.example.com/steward/agent:0.1.0",
      operatorsDir: join(__dirname, "..", "..", "operators"),
    });
    await settle(out);
    const kube = registered.filter((r) => r.type.startsWith("kubernetes:") && !r.type.startsWith("pulumi:providers"));
    const byKind = (k: string): Registered[] => kube.filter((r) => r.type.endsWith(`:${k}`));
    t.deepEqual(kube.map((r) => r.type.split(":").pop()).sort(), [
      "Namespace",
      "PodDisruptionBudget",
      "Role",
      "RoleBinding",
      "Secret",
      "Secret",
      "Service",
      "Service",
      "ServiceAccount",
      "StatefulSet",
    ]);

    // Every manifest passes the official schema (kubernetes-models, as the fake API server checks).
    for (const r of kube) {
      const manifest = plain(r.inputs);
      const info = KINDS.find(
        (k) => k.kind === manifest.kind && (k.group ? `${k.group}/${k.version}` : k.version) === manifest.apiVersion,
      );
      t.truthy(info, `${manifest.kind} ${manifest.apiVersion} is a kind the fake knows`);
      t.notThrows(
        () => validateSchema(info!, manifest),
        `${manifest.kind} ${manifest.metadata?.name} passes the schema`,
      );
    }
    // A wrong one is refused by the same check.
    const set = plain(byKind("StatefulSet")[0]!.inputs);
    const statefulSetInfo = KINDS.find((k) => k.kind === "StatefulSet")!;
    t.throws(() => validateSchema(statefulSetInfo, { ...set, spec: { ...set.spec, replicas: "three" } }), {
      message: /cannot unmarshal|Invalid value/,
    });

    // Wiring: the peers Service governs the StatefulSet; pods mount the seed and enrolment Secrets by name.
    t.is(set.spec.serviceName, "controller-peers");
    t.is(set.spec.replicas, 1, "one pod at first: the controller grows itself");
    t.is(set.spec.template.spec.containers[0].image, "registry.example.com/steward/controller:0.1.0");
    const secretNames = byKind("Secret")
      .map((r) => plain(r.inputs).metadata.name)
      .sort();
    t.deepEqual(secretNames, ["controller-enrol", "controller-seed"]);
    t.deepEqual(
      set.spec.template.spec.volumes.map((v: { secret: { secretName: string } }) => v.secret.secretName).sort(),
      secretNames,
    );
    const peers = byKind("Service")
      .map((r) => plain(r.inputs))
      .find((s) => s.metadata.name === "controller-peers");
    t.is(peers.spec.clusterIP, "None");
    t.true(peers.spec.publishNotReadyAddresses);
    t.deepEqual(peers.spec.selector, set.spec.selector.matchLabels);
    t.is(plain(byKind("PodDisruptionBudget")[0]!.inputs).spec.minAvailable, 2, "a majority of 3");
    t.is(plain(byKind("RoleBinding")[0]!.inputs).subjects[0].name, set.spec.template.spec.serviceAccountName);

    // Secrets: the seed's content (CA key, admin password) and the kubeconfig never in plain text.
    const seedSecret = byKind("Secret").find((r) => plain(r.inputs).metadata.name === "controller-seed")!;
    t.is(JSON.stringify(seedSecret.inputs).includes("BEGIN PRIVATE KEY"), true, "the mock sees the value…");
    const secretPaths: string[] = [];
    unwrapSecrets(seedSecret.inputs, "", secretPaths);
    t.true(
      secretPaths.some((p) => p.includes("stringData")),
      `…marked secret (${secretPaths.join(", ")})`,
    );
    const ready = registered.find((r) => r.type.endsWith(":KubernetesControllerReady"))!;
    t.true(JSON.stringify(ready.inputs.kubeconfig).includes(SECRET_SIG), "the kubeconfig is a secret input");
    t.is(ready.inputs.replicas, 3);

    // The model is on the cluster the controller holds.
    const model = registered.find((r) => r.type.endsWith(":Model"))!;
    t.is(model.inputs.substrate, "kubernetes");
    t.is(model.inputs.credential, "controller-cluster");
    const apps = registered.filter((r) => r.type.endsWith(":Application"));
    t.deepEqual(apps.map((r) => r.name).sort(), ["checker", "db", "web"]);
    // The operators it deploys are valid (as an upload checks them); web's declares its nginx container.
    for (const app of apps) {
      const meta = validateBundle((await readOperatorDir((app.inputs.operator as { path: string }).path)).bundle);
      if (app.name === "web") t.deepEqual(Object.keys(meta.containers ?? {}), ["web"]);
    }
  },
);
