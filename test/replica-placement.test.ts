/**
 * The replica cloud (where the quorum keeper launches replacement replicas) is a placement like a
 * model's: `{substrate, credential, settings}`, one request shape per kind whose contract says it
 * hosts replicas. Checked here: the request is generated from the contracts and names what is
 * missing; a request in the shape before placements (settings under the kind's name, as an older
 * client sends it) is read as a placement; a stored document of that shape, as an older store or
 * backup holds it, reads as one through the state cache (with the credential an older Kubernetes
 * bootstrap stored dropped); and the kinds that host replicas give the keeper their broker, found
 * by the replica cloud's kind (and, on Kubernetes, the client Service's address clients are given).
 */
import test from "ava";
import { REPLICA_SUBSTRATES, ReplicaCloudRequest, SUBSTRATE_CONTRACTS, describeIssues } from "../api";
import { CloudReplicaHosts, KIND, clusterAddresses, keys, replicaCloudDocOf, storedValue } from "../controller";
import { SUBSTRATES } from "../substrates";
import { storeWithCache } from "./harness/state";

const AWS = { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" };
const VSPHERE = { url: "https://vcenter.example.com/sdk", datacenter: "DC1", template: "debian-12" };
const POD_SET = { namespace: "steward", statefulSet: "controller" };

const parsed = (body: unknown) => {
  const res = ReplicaCloudRequest.safeParse(body);
  return res.success ? { ok: res.data } : { problem: describeIssues(res.error.issues) };
};

test("the kinds that host replicas are those whose contract says so, and each gives the keeper its broker", (t) => {
  t.deepEqual(REPLICA_SUBSTRATES, ["aws", "vsphere", "kubernetes"]);
  for (const k of REPLICA_SUBSTRATES) {
    t.truthy(SUBSTRATE_CONTRACTS[k].replicaHosts, k);
    t.is(typeof SUBSTRATES[k]().replicaHosts, "function", `${k} gives replicaHosts()`);
  }
  for (const k of ["local", "manual", "ssh"] as const) t.is(SUBSTRATES[k]().replicaHosts, undefined, k);
});

test("a replica cloud request is a placement: one shape per kind, with what is missing named", (t) => {
  t.deepEqual(parsed({ substrate: "aws", credential: "prod", settings: { ...AWS, instanceType: undefined } }), {
    ok: { substrate: "aws", credential: "prod", settings: AWS },
  });
  t.deepEqual(parsed({ substrate: "kubernetes", settings: POD_SET }), {
    ok: { substrate: "kubernetes", settings: POD_SET },
  });
  t.regex(parsed({ substrate: "vsphere", settings: VSPHERE }).problem ?? "", /credential.*is required.*add-credential/);
  t.regex(
    parsed({ substrate: "kubernetes", credential: "k", settings: POD_SET }).problem ?? "",
    /credential.*not for a kubernetes replica cloud/,
  );
  t.regex(parsed({ substrate: "kubernetes", settings: { namespace: "steward" } }).problem ?? "", /statefulSet/);
  t.regex(parsed({ substrate: "ssh", settings: {} }).problem ?? "", /substrate.*one of aws, vsphere, kubernetes/);
  t.regex(parsed({ substrate: "aws", credential: "prod", settings: { region: "nowhere" } }).problem ?? "", /region/);
});

test("a request in the shape before placements (settings under the kind's name) is read as a placement", (t) => {
  t.deepEqual(parsed({ substrate: "vsphere", credential: "lab", vsphere: VSPHERE }), {
    ok: { substrate: "vsphere", credential: "lab", settings: VSPHERE },
  });
  t.deepEqual(parsed({ substrate: "kubernetes", kubernetes: POD_SET }), {
    ok: { substrate: "kubernetes", settings: POD_SET },
  });
  // Settings under another kind's name are not this kind's: refused as unknown.
  t.regex(parsed({ substrate: "aws", credential: "prod", vsphere: VSPHERE }).problem ?? "", /settings|vsphere/);
});

test("a stored replica cloud of the shape before placements reads as a placement through the cache", async (t) => {
  t.deepEqual(replicaCloudDocOf({ substrate: "aws", credential: "prod", aws: AWS }), {
    substrate: "aws",
    credential: "prod",
    settings: AWS,
  });
  // A credential an older Kubernetes bootstrap stored was never used by its pods: it is dropped.
  t.deepEqual(replicaCloudDocOf({ substrate: "kubernetes", credential: "old", kubernetes: POD_SET }), {
    substrate: "kubernetes",
    settings: POD_SET,
  });
  const current = { substrate: "vsphere", credential: "lab", settings: VSPHERE } as const;
  t.deepEqual(replicaCloudDocOf(current), current);
  // Stored in both shapes for the previous build's replicas during a rolling upgrade; read back as the placement.
  const stored = JSON.parse(storedValue(KIND["cluster-replica-cloud"], current, 1)) as Record<string, unknown>;
  t.deepEqual(stored.vsphere, VSPHERE);
  t.deepEqual(replicaCloudDocOf(JSON.parse(JSON.stringify(stored))), current);

  const { store, cache } = await storeWithCache(t, "replica-placement");
  await store.put(
    keys.clusterReplicaCloud,
    JSON.stringify({ substrate: "vsphere", credential: "lab", vsphere: VSPHERE }),
  );
  await cache.catchUp();
  t.deepEqual(cache.replicaCloud, current);
});

test("the keeper's replica cloud broker is the kind's: available once a cloud is set, and the Service address comes from the kind", async (t) => {
  const { store, cache } = await storeWithCache(t, "replica-hosts");
  // Only what choosing a broker reads is real here (the cache); launching a host is cloud-replicas.test.ts's.
  const hosts = new CloudReplicaHosts({ cache } as ConstructorParameters<typeof CloudReplicaHosts>[0]);
  t.teardown(() => hosts.close()); // before the cache stops: ava runs a test's clean-ups last registered first
  t.regex(hosts.unavailable() ?? "", /no cloud is set for replicas/);
  t.deepEqual(clusterAddresses(cache, ["10.0.0.1:17070"]), ["10.0.0.1:17070"]);
  await store.put(keys.clusterReplicaCloud, JSON.stringify({ substrate: "aws", credential: "prod", aws: AWS }));
  await cache.catchUp();
  t.is(hosts.unavailable(), undefined);
  t.deepEqual(clusterAddresses(cache, ["10.0.0.1:17070"]), ["10.0.0.1:17070"]);
  await store.put(keys.clusterReplicaCloud, JSON.stringify({ substrate: "kubernetes", settings: POD_SET }));
  await cache.catchUp();
  t.is(hosts.unavailable(), undefined);
  t.deepEqual(clusterAddresses(cache, ["10.0.0.1:17070"]), [
    "controller.steward.svc.cluster.local:17070",
    "10.0.0.1:17070",
  ]);
});
