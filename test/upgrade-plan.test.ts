/**
 * What `steward upgrade-controller` decides from the controller's answer before it changes anything:
 * the order, and each refusal with what to do about it.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import type { ClusterInfo, ControllerInfo, ControllerUpgrade } from "../api";
import { STORE_FORMAT, StewardError } from "../api";
import { planUpgrade, unsupportedReplicas } from "../cli";
import { CONTROLLER_HOSTING, kubernetes } from "../substrates";

type Member = ClusterInfo["members"][number];
const member = (name: string, o: Partial<Member> = {}): Member => ({
  name,
  host: `10.0.0.${name.slice(1)}`,
  addresses: [`10.0.0.${name.slice(1)}:17070`],
  state: "voter",
  hasVote: true,
  learner: false,
  present: true,
  leader: false,
  etcdLeader: false,
  version: "0.1.0",
  ...o,
});
const info = (members: Member[], o: Partial<ClusterInfo> = {}): ControllerInfo => ({
  name: "prod",
  uuid: "u",
  version: "0.1.0",
  addresses: [],
  caFingerprint: "AB:CD",
  replicas: members
    .filter((m) => m.present)
    .map((m) => ({
      id: m.name,
      addresses: m.addresses,
      leader: m.leader,
      since: "2026-11-25T00:00:00Z",
      ...(m.version ? { version: m.version } : {}),
    })),
  cluster: {
    store: "etcd",
    quorum: true,
    wantsVote: members.length,
    replaceAfterSeconds: 300,
    maxReplacementsPerHour: 2,
    members,
    spares: [],
    keeper: { state: "idle", message: "", history: [] },
    ...o,
  },
});
const three = (o: Partial<Record<"r1" | "r2" | "r3", Partial<Member>>> = {}): Member[] => [
  member("r1", { leader: true, ...o.r1 }),
  member("r2", o.r2),
  member("r3", o.r3),
];
const refusal = (t: ExecutionContext, f: () => unknown, pattern: RegExp): void => {
  const err = t.throws(f, { instanceOf: StewardError });
  t.regex(err!.message, pattern);
};
const record = (o: Partial<ControllerUpgrade>): ControllerUpgrade => ({
  run: "run-1",
  from: "0.1.0",
  to: "0.1.1",
  state: "running",
  startedAt: "2026-11-25T00:00:00Z",
  updatedAt: "2026-11-25T00:00:00Z",
  message: "",
  replicas: [
    { name: "r2", host: "10.0.0.2", version: "0.1.1", state: "upgraded" },
    { name: "r3", host: "10.0.0.3", version: "0.1.0", state: "upgrading" },
    { name: "r1", host: "10.0.0.1", version: "0.1.0", state: "pending" },
  ],
  ...o,
});

test("followers first by name, the leader last", (t) => {
  const plan = planUpgrade(info([member("r3"), member("r1", { leader: true }), member("r2")]), "0.1.1");
  t.deepEqual(
    plan.steps.map((s) => s.name),
    ["r2", "r3", "r1"],
  );
  t.is(plan.from, "0.1.0");
});

test("a major step, or more than one minor, is refused: it goes by migration", (t) => {
  refusal(t, () => planUpgrade(info(three()), "0.3.0"), /more than one minor version, goes by migration/);
  refusal(t, () => planUpgrade(info(three()), "1.0.0"), /--via-migration TARGET/);
});

test("the next minor goes in place when this release reads the store's format, and the plan says it migrates the store", (t) => {
  const older = info(three().map((m) => ({ ...m, version: "0.0.4" })));
  const plan = planUpgrade({ ...older, store: { format: STORE_FORMAT - 1 } }, "0.1.0");
  t.is(plan.steps.length, 3);
  t.is(plan.storeFrom, STORE_FORMAT - 1);
  // A controller from before store formats reports none: format 1.
  t.is(planUpgrade(older, "0.1.0").storeFrom, 1);
  t.is(planUpgrade({ ...info(three()), store: { format: STORE_FORMAT } }, "0.1.1").storeFrom, undefined);
  refusal(
    t,
    () => planUpgrade({ ...older, store: { format: STORE_FORMAT + 1 } }, "0.1.0"),
    new RegExp(`store is at format ${STORE_FORMAT + 1}, which 0\\.1\\.0 does not migrate`),
  );
});

test("a client older than any replica is refused", (t) => {
  refusal(
    t,
    () => planUpgrade(info(three({ r2: { version: "0.1.2" } })), "0.1.1"),
    /this client is older \(0\.1\.1\) than replica r2 \(0\.1\.2\)/,
  );
});

test("nothing to do when every replica is at the version", (t) => {
  t.deepEqual(
    planUpgrade(info(three({ r1: { version: "0.1.1" }, r2: { version: "0.1.1" }, r3: { version: "0.1.1" } })), "0.1.1")
      .steps,
    [],
  );
});

test("an unhealthy cluster is refused, naming the replica", (t) => {
  refusal(
    t,
    () => planUpgrade(info(three({ r3: { present: false, version: undefined } })), "0.1.1"),
    /replica r3 does not report its version/,
  );
  const down = info(three());
  down.cluster.members[2]!.present = false; // its presence lapsed, its version known from before
  refusal(t, () => planUpgrade(down, "0.1.1"), /replica r3 on 10\.0\.0\.3 is down/);
  refusal(
    t,
    () => planUpgrade(info([...three(), member("r4", { hasVote: false, learner: true, state: "learner" })]), "0.1.1"),
    /r4 is still joining/,
  );
  refusal(
    t,
    () => planUpgrade(info(three(), { keeper: { state: "acting", message: "replacing r3", history: [] } }), "0.1.1"),
    /quorum keeper is changing the cluster \(replacing r3\)/,
  );
  refusal(t, () => planUpgrade(info(three(), { quorum: false }), "0.1.1"), /no quorum/);
});

test("an upgrade in progress is refused; one whose run died is resumed", (t) => {
  const now = Date.parse("2026-11-25T00:00:30Z");
  const recent = info(three({ r2: { version: "0.1.1" } }), { upgrade: record({}) });
  refusal(
    t,
    () => planUpgrade(recent, "0.1.1", now),
    /an upgrade to 0\.1\.1 is in progress \(replica r3 on 10\.0\.0\.3: upgrading\)/,
  );
  const plan = planUpgrade(recent, "0.1.1", now + 120_000);
  t.truthy(plan.resumes);
  t.deepEqual(
    plan.steps.map((s) => s.name),
    ["r3", "r1"],
  );
  t.deepEqual(
    plan.done.map((s) => s.name),
    ["r2"],
  );
});

test("an unfinished upgrade to another version must be finished with its own client", (t) => {
  const failed = info(three({ r2: { version: "0.1.1" } }), { upgrade: record({ state: "failed" }) });
  refusal(
    t,
    () => planUpgrade(failed, "0.1.2"),
    /a previous upgrade to 0\.1\.1 did not complete \(replica r3 on 10\.0\.0\.3: upgrading\): finish it first by running upgrade-controller with steward 0\.1\.1/,
  );
});

test("replicas on cloud instances are refused with what to do instead; each hosting kind says whether it upgrades its replicas", async (t) => {
  const steps = planUpgrade(info(three()), "0.1.1").steps;
  t.is(unsupportedReplicas(CONTROLLER_HOSTING.kubernetes(), steps, "0.1.1"), undefined, "by the StatefulSet's image");
  t.is(unsupportedReplicas(CONTROLLER_HOSTING.ssh(), steps, "0.1.1"), undefined, "replicas over SSH are upgraded");
  for (const cloud of [CONTROLLER_HOSTING.aws(), CONTROLLER_HOSTING.vsphere()])
    t.regex(
      unsupportedReplicas(cloud, steps, "0.1.1") ?? "",
      /replica r\d runs on a cloud instance, which this command cannot upgrade in place yet \(cloud-init installed it and no SSH access to it is kept\): bootstrap a controller at 0\.1\.1 and move the models to it by migration/,
    );
  // A replica the quorum keeper launched on a cloud, on a controller installed over SSH: refused before any key is read.
  const onEc2 = planUpgrade(info(three({ r3: { instance: { id: "i-0abc" } } })), "0.1.1").steps;
  const upgrade = await CONTROLLER_HOSTING.ssh().replicaUpgrade!(
    {},
    {
      to: "0.1.1",
      caCert: "",
      timeoutMs: 1000,
      sshAccess: () => Promise.reject(new Error("no key is read for a refused plan")),
      kubeconfig: () => t.fail("no kubeconfig") as never,
      image: () => undefined,
    },
  );
  await t.throwsAsync(upgrade.upgrader(onEc2), {
    message:
      /replica r3 runs on the cloud instance i-0abc, which this command cannot upgrade in place yet \(cloud-init installed it and no SSH access to it is kept\): bootstrap a controller at 0\.1\.1/,
  });
});

test("Kubernetes: the new image keeps the registry and repository, with the new version as its tag; a replica's pod ordinal is read from its host", (t) => {
  t.is(kubernetes.imageWithTag("steward/controller:0.1.0", "0.1.1"), "steward/controller:0.1.1");
  t.is(
    kubernetes.imageWithTag("registry.example.com:5000/ops/steward/controller:0.1.0", "0.1.1"),
    "registry.example.com:5000/ops/steward/controller:0.1.1",
    "a registry's port is not a tag",
  );
  t.is(
    kubernetes.imageWithTag("registry.example.com:5000/steward/controller", "0.1.1"),
    "registry.example.com:5000/steward/controller:0.1.1",
  );
  t.is(
    kubernetes.imageWithTag(`steward/controller:0.1.0@sha256:${"a".repeat(64)}`, "0.1.1"),
    "steward/controller:0.1.1",
    "a digest pins the old image: dropped",
  );
  t.is(kubernetes.ordinalOf({ name: "ctl-2-b01c", host: "ctl-2.ctl-peers.steward.svc.cluster.local" }, "ctl"), 2);
  t.is(kubernetes.ordinalOf({ name: "x", host: "my-ctl-10.my-ctl-peers.ns.svc.cluster.local" }, "my-ctl"), 10);
  t.throws(() => kubernetes.ordinalOf({ name: "x", host: "ctl-2.ctl-peers.steward.svc.cluster.local" }, "other"), {
    message: /not a pod of StatefulSet other/,
  });
  t.throws(() => kubernetes.ordinalOf({ name: "x", host: "10.0.0.1" }, "ctl"), {
    message: /not a pod of StatefulSet ctl/,
  });
});
