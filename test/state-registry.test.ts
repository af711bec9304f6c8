/**
 * The registry of document kinds: every key keys.ts builds is read back as the kind it is, with
 * its model and id; sequences are not mistaken for ids; keys of no kind are not classified. The
 * controller-wide keys (cluster, backups, request records) come from it too, in the layout stores hold.
 */
import test from "ava";
import {
  EXPORTED_KINDS,
  KIND,
  KINDS,
  MODEL_KINDS,
  REPLICAS_PREFIX,
  classifyKey,
  docs,
  keyOf,
  keys,
  prefixOf,
  queueId,
  scopeId,
} from "../controller";

const M = "0b6f4c1e-7f0e-4d43-9d2a-3c8f9a1b2c3d";

const cases: [string, string, string | undefined, string][] = [
  [keys.controller, "controller-info", undefined, ""],
  [keys.tokenKey, "token-key", undefined, ""],
  [keys.user("alice"), "user", undefined, "alice"],
  [keys.revokedToken("t1"), "revoked-token", undefined, "t1"],
  [keys.registration("alice"), "registration", undefined, "alice"],
  [keys.modelName("demo"), "model-name", undefined, "demo"],
  [keys.operator("sha256-ab"), "operator", undefined, "sha256-ab"],
  [keys.operatorChunk("sha256-ab", 3), "operator-chunk", undefined, "sha256-ab/3"],
  [keys.operatorUpload("sha256-ab"), "operator-upload", undefined, "sha256-ab"],
  [keys.credential("c"), "credential", undefined, "c"],
  [keys.enrolment("h"), "enrolment", undefined, "h"],
  ["/controller/restore", "restore-epoch", undefined, ""],
  [keys.operatorQuotaSeq, "operator-quota-seq", undefined, ""],
  [`${keys.backupsPrefix}20261125T001500Z-a1b2c3`, "backup", undefined, "20261125T001500Z-a1b2c3"],
  [
    `${keys.backupChunksPrefix}20261125T001500Z-a1b2c3/000001`,
    "backup-chunk",
    undefined,
    "20261125T001500Z-a1b2c3/000001",
  ],
  [keys.release("0.2.0"), "release", undefined, "0.2.0"],
  [keys.releaseChunk("0.2.0", "sha256-ab", 1), "release-chunk", undefined, "0.2.0/sha256-ab/1"],
  [keys.releaseSource, "release-source", undefined, ""],
  [keys.releaseKeys, "release-keys", undefined, ""],
  [keys.storeMigration, "store-migration", undefined, ""],
  [`${keys.requestsPrefix}r-1/response`, "request-record", undefined, "r-1/response"],
  [keys.clusterConfig, "cluster-config", undefined, ""],
  [keys.clusterMember("r1"), "cluster-member", undefined, "r1"],
  [keys.clusterSpare("h1"), "cluster-spare", undefined, "h1"],
  [keys.clusterKeeper, "cluster-keeper", undefined, ""],
  [keys.clusterReplicaCloud, "cluster-replica-cloud", undefined, ""],
  [keys.clusterUpgrade, "cluster-upgrade", undefined, ""],
  [keys.clusterLeader, "cluster-leader", undefined, ""],
  [`${REPLICAS_PREFIX}r2`, "cluster-replica", undefined, "r2"],
  [keys.model(M), "model", M, ""],
  [keys.app(M, "web"), "app", M, "web"],
  [keys.unit(M, "web/0"), "unit", M, "web/0"],
  [keys.unitStatus(M, "web/0"), "unit-status", M, "web/0"],
  [keys.unitFailure(M, "web/0"), "unit-failure", M, "web/0"],
  [keys.unitHookState(M, "web/0"), "unit-hook-state", M, "web/0"],
  [keys.machine(M, "0"), "machine", M, "0"],
  [keys.machineInfo(M, "0"), "machine-info", M, "0"],
  [keys.machineInstall(M, "0"), "machine-install", M, "0"],
  [keys.machineSeq(M), "machine-seq", M, ""],
  [keys.relationSeq(M), "relation-seq", M, ""],
  [keys.taskSeq(M), "task-seq", M, ""],
  [keys.operatorSeq(M), "operator-seq", M, ""],
  [keys.storageSeq(M), "storage-seq", M, ""],
  [keys.secretSeq(M), "secret-seq", M, ""],
  [keys.storage(M, "data/0"), "storage", M, "data/0"],
  [keys.secret(M, "cs1k4tb5h0ut5tqbqq10"), "secret", M, "cs1k4tb5h0ut5tqbqq10"],
  [keys.secretRevision(M, "cs1k4tb5h0ut5tqbqq10", 3), "secret-revision", M, "cs1k4tb5h0ut5tqbqq10/3"],
  [keys.relation(M, 4), "relation", M, "4"],
  [keys.scope(M, 4, "web/1"), "scope", M, "4/web/1"],
  [keys.unitBag(M, 4, "web/1"), "relation-data", M, "4/unit/web/1"],
  [keys.appBag(M, 4, "web"), "relation-data", M, "4/app/web"],
  [keys.leader(M, "web"), "leader", M, "web"],
  [keys.leaderData(M, "web"), "leader-data", M, "web"],
  [keys.ports(M, "web/0"), "ports", M, "web/0"],
  [keys.taskQueue(M, "web/0", 12), "task-queue", M, "web/0/0000000012"],
  [keys.task(M, 12), "task", M, "0000000012"],
  [keys.operation(M, 12), "operation", M, "0000000012"],
  [keys.statusHistory(M, "web/0"), "status-history", M, "web/0"],
  [keys.appStatus(M, "web"), "app-status", M, "web"],
  [keys.access(M, "alice"), "access", M, "alice"],
  [keys.presence(M, "0"), "presence", M, "0"],
];

for (const [key, kind, model, id] of cases) {
  test(`${key.replace(M, "<m>")} is a ${kind}`, (t) => {
    const c = classifyKey(key);
    t.is(c?.kind.name as string | undefined, kind);
    t.is(c?.model, model);
    t.is(c?.id, id);
    // And the registry builds the same key back.
    t.is(keyOf(c!.kind, model ?? "", id), key);
  });
}

test("every typed document kind builds keys of its own kind, and lists under its own prefix", (t) => {
  // Ids as the key builders take them: strings, a relation or task number, a unit name with a slash.
  const ids = [M, "7", "web/0", "3"];
  for (const [name, d] of Object.entries(docs)) {
    const key = (d.key as unknown as (...a: string[]) => string)(...ids.slice(0, d.key.length));
    t.is(classifyKey(key)?.kind.name, d.kind, `${name}: ${key}`);
    if (d.prefix) {
      const prefix = (d.prefix as unknown as (...a: string[]) => string)(...ids.slice(0, d.prefix.length));
      t.true(prefix.endsWith("/") && classifyKey(`${prefix}x`)?.kind.name === d.kind, `${name}: ${prefix}`);
    }
  }
  // Reads come back in the kind's current shape: a model stored before `placement` reads with one.
  const old = { uuid: M, name: "m", owner: "admin", life: "alive", createdAt: "", config: {}, substrate: "local" };
  t.is(docs.model.decode(old).placement.substrate, "local");
});

test("keys of no kind, and truncated keys, are not classified", (t) => {
  for (const key of [
    "/nothing/here",
    `/models/${M}/apps`,
    `/models/${M}/apps/`,
    `/models/${M}/seq/other`,
    "/controller/other",
    "models",
    "/",
    `/models//apps/web`,
  ]) {
    t.is(classifyKey(key), undefined, key);
  }
});

test("split ids, prefixes, and what an export carries", (t) => {
  t.deepEqual(scopeId("4/web/1"), { relation: 4, unit: "web/1" });
  t.deepEqual(queueId("web/0/0000000012"), { unit: "web/0", task: 12 });
  t.is(prefixOf(KIND.app, M), `/models/${M}/apps/`);
  t.is(prefixOf(KIND["task-seq"], M), keys.taskSeq(M));
  t.is(prefixOf(KIND.task, M), keys.tasksOf(M));
  t.true(MODEL_KINDS.every((k) => keyOf(k, M, "x").includes(M)));
  // Every model kind either travels or says why not.
  for (const k of MODEL_KINDS) t.true(k.exported === true || k.exported.length > 10, k.name);
  const exported = new Set(EXPORTED_KINDS.map((k) => k.name));
  t.false(exported.has("presence"));
  t.true(exported.has("leader") && exported.has("relation-data") && exported.has("task-seq"));
  t.true(exported.has("storage") && exported.has("storage-seq"), "storage outlives units, and moves with its model");
  t.true(exported.has("secret"), "secrets' metadata moves with its model");
  t.false(exported.has("secret-revision"), "sealed content is carried re-sealed, never as the source's keys");
  t.false(KIND["secret-revision"].cached, "values are never kept in the state cache");
  t.is(new Set(KINDS.map((k) => k.name)).size, KINDS.length);
});

test("keys.ts builds, through the registry, exactly the layout stores already hold", (t) => {
  t.deepEqual(
    [
      keys.revokedTokensPrefix,
      keys.modelPrefix("M"),
      keys.unitsOf("M", "web"),
      keys.relationsPrefix("M"),
      keys.scopePrefix("M", 3),
      keys.relationDataPrefix("M", 3),
      keys.taskQueueOf("M", "web/0"),
      keys.tasksOf("M"),
      keys.operationsOf("M"),
      keys.statusHistoryOf("M"),
      keys.presencePrefix("M"),
      keys.operatorChunks("h"),
      keys.releaseChunks("0.2.0", "h"),
      keys.operatorUploads,
      keys.credentialsPrefix,
      keys.enrolmentsPrefix,
    ],
    [
      "/revoked-tokens/",
      "/models/M/",
      "/models/M/units/web/",
      "/models/M/relations/",
      "/models/M/relation-scope/3/",
      "/models/M/relation-data/3/",
      "/models/M/task-queue/web/0/",
      "/tasks/M/",
      "/operations/M/",
      "/status-history/M/",
      "/presence/M/",
      "/blobs/operators/h/",
      "/blobs/releases/0.2.0/h/",
      "/blobs/operator-uploads/",
      "/credentials/",
      "/enrolments/",
    ],
  );
  t.is(keys.ports("M", "web/0"), "/models/M/unit-ports/web/0");
  // Controller-wide keys, spelled out here once: a registry change that moves them fails here, not in a store.
  t.deepEqual(
    [
      keys.clusterLeader,
      REPLICAS_PREFIX,
      keys.clusterConfig,
      keys.clusterMembers,
      keys.clusterMember("r1"),
      keys.clusterSpares,
      keys.clusterSpare("h1"),
      keys.clusterKeeper,
      keys.clusterReplicaCloud,
      keys.clusterUpgrade,
      keys.backupsPrefix,
      keys.backupChunksPrefix,
      keys.requestsPrefix,
    ],
    [
      "/cluster/leader",
      "/cluster/replicas/",
      "/cluster/config",
      "/cluster/members/",
      "/cluster/members/r1",
      "/cluster/spares/",
      "/cluster/spares/h1",
      "/cluster/keeper",
      "/cluster/replica-cloud",
      "/cluster/upgrade",
      "/backups/",
      "/blobs/backups/",
      "/requests/",
    ],
  );
  t.is(keys.taskQueue("M", "web/0", 5), "/models/M/task-queue/web/0/0000000005");
});
