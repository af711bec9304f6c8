/**
 * Agents' views as pushed: the text a push round builds from shared parts is the same JSON as the
 * plain view built from objects, for every machine of a model that has what a view can hold
 * (several applications per machine, a regular and a peer integration with units in scope, databag
 * and leader-data revisions, leadership, a pending resolve, queued actions, a dying machine, config defaults under
 * set values, and names and values that JSON must escape).
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentView } from "../api";
import type {
  ApplicationDoc,
  MachineDoc,
  ModelDoc,
  OperatorDoc,
  RelationDoc,
  StorageDoc,
  UnitDoc,
} from "../controller";
import { AgentViewRound, EmbeddedStore, StateCache, buildAgentView, keys } from "../controller";
import { eventually } from "./harness/eventually";

const M = "4b0c5e0a-9d1e-4f6a-8b7c-2d3e4f5a6b7c";
const at = "2026-11-24T00:00:00.000Z";
const operator = (name: string, config: OperatorDoc["meta"]["config"]): OperatorDoc => ({
  hash: `v2-${name}`,
  name,
  version: "1.0.0",
  bytes: 10,
  chunks: 1,
  uploadedAt: at,
  meta: { name, version: "1.0.0", summary: "", description: "", provides: {}, requires: {}, peers: {}, config },
});

test("a round's view text equals the plain view, machine by machine", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-views-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const put = (key: string, doc: unknown): Promise<unknown> => store.put(key, JSON.stringify(doc));

  const web = operator("web", {
    greeting: { type: "string", default: 'hello "world"\n', description: "" },
    port: { type: "int", default: 80, description: "" },
  });
  const db = operator("db", { ha: { type: "boolean", default: false, description: "" } });
  await put(keys.operator(web.hash), web);
  await put(keys.operator(db.hash), db);
  await put(keys.model(M), {
    uuid: M,
    name: "views",
    owner: "admin",
    life: "alive",
    createdAt: at,
    config: { updateStatusInterval: 42, automaticallyRetryHooks: false },
    placement: { substrate: "local", settings: {} },
  } satisfies ModelDoc);
  await put(keys.app(M, "web"), {
    name: "web",
    operator: { hash: web.hash, name: "web", version: "1.0.0" },
    config: { greeting: "héllo <\u2028> \\ \u0001" },
    life: "alive",
    nextUnit: 3,
    createdAt: at,
  } satisfies ApplicationDoc);
  await put(keys.app(M, "db"), {
    name: "db",
    operator: { hash: db.hash, name: "db", version: "1.0.0" },
    config: {},
    life: "dying",
    nextUnit: 2,
    createdAt: at,
  } satisfies ApplicationDoc);
  for (const id of ["0", "1", "2"])
    await put(keys.machine(M, id), {
      id,
      substrate: "manual",
      life: id === "2" ? "dying" : "alive",
      createdAt: at,
    } satisfies MachineDoc);
  const units: [string, string, string][] = [
    ["web/0", "web", "0"],
    ["web/1", "web", "1"],
    ["web/2", "web", "0"],
    ["db/0", "db", "0"],
    ["db/1", "db", "2"],
  ];
  for (const [name, app, machine] of units)
    await put(keys.unit(M, name), {
      name,
      app,
      machine,
      life: name === "web/1" ? "dying" : "alive",
      createdAt: at,
      ...(name === "web/2" ? { resolve: "retry" as const } : {}),
    } satisfies UnitDoc);
  await put(keys.relation(M, 1), {
    id: 1,
    key: "db:db web:db",
    endpoints: [
      { app: "web", endpoint: "db", role: "requirer", interface: "pg" },
      { app: "db", endpoint: "db", role: "provider", interface: "pg" },
    ],
    life: "alive",
    createdAt: at,
  } satisfies RelationDoc);
  await put(keys.relation(M, 2), {
    id: 2,
    key: "web:peers",
    endpoints: [{ app: "web", endpoint: "peers", role: "peer", interface: "web-peer" }],
    life: "alive",
    createdAt: at,
  } satisfies RelationDoc);
  for (const u of ["web/0", "web/1", "db/0", "db/1"]) await put(keys.scope(M, 1, u), {});
  for (const u of ["web/0", "web/1", "web/2"]) await put(keys.scope(M, 2, u), {});
  await put(keys.unitBag(M, 1, "db/0"), { host: "10.0.0.1" });
  await put(keys.appBag(M, 1, "db"), { password: "x" });
  await put(keys.unitBag(M, 2, "web/1"), { peer: "yes" });
  await put(keys.leader(M, "web"), { unit: "web/0", since: at, lease: "1" });
  await put(keys.leaderData(M, "web"), { secret: "s" });
  await put(keys.taskQueue(M, "web/0", 7), {
    id: 7,
    action: "restart",
    params: { delay: 5, why: 'a "quoted" reason' },
    state: "pending",
  });
  await put(keys.taskQueue(M, "web/0", 12), { id: 12, action: "backup", params: {}, state: "running" });
  await put(keys.taskQueue(M, "web/0", 30), { id: 30, action: "backup", params: {}, state: "pending" });
  await put(keys.taskQueue(M, "web/0", 25), { id: 25, action: "restart", params: {}, state: "pending" });
  // Storage: one mounted by machine 0's agent, one it must release and delete, one attached by its broker alone.
  const storage = (id: string, over: Partial<StorageDoc>): StorageDoc => ({
    id,
    name: "data",
    app: "web",
    kind: "filesystem",
    pool: "rootfs",
    size: 64,
    status: "attached",
    life: "alive",
    createdAt: at,
    ...over,
  });
  await put(
    keys.storage(M, "data/0"),
    storage("data/0", {
      unit: "web/0",
      machine: "0",
      machineWork: { mode: "device", device: { byId: ['virtio-"quoted"'] }, kind: "filesystem", mountPoint: "/srv/d" },
      onMachine: { location: "/srv/d" },
      location: "/srv/d",
    }),
  );
  await put(
    keys.storage(M, "data/1"),
    storage("data/1", {
      status: "detached",
      machine: "0",
      life: "dying",
      machineWork: { mode: "directory", path: "/var/lib/steward/storage/m/data-1" },
      onMachine: { location: "/var/lib/steward/storage/m/data-1" },
    }),
  );
  await put(keys.storage(M, "data/2"), storage("data/2", { unit: "web/1", machine: "1", location: "/x" }));

  const cache = await StateCache.start(store, (err) => t.fail(err.message));
  t.teardown(() => cache.stop());
  await eventually(
    "the cache holds the model",
    () =>
      (cache.models.get(M)?.units.size ?? 0) === units.length &&
      cache.models.get(M)?.leaderData.size === 1 &&
      cache.models.get(M)?.taskQueue.get("web/0")?.size === 4 &&
      cache.models.get(M)?.storage.size === 3,
  );
  const idx = cache.models.get(M)!;
  const addresses = ["127.0.0.1:17070", "[::1]:17070"];
  const round = new AgentViewRound(cache, addresses, 30);
  for (const machine of ["0", "1", "2", "9"]) {
    const text = round.text(idx, machine);
    t.is(text, JSON.stringify(buildAgentView(cache, idx, machine, addresses, 30)), `machine ${machine}`);
    t.is(round.text(idx, machine), text, "the round's shared parts do not change a second view");
  }

  // What the comparison covered: the plain view is not trivially empty.
  const view = JSON.parse(round.text(idx, "0")) as AgentView;
  t.deepEqual(
    view.units.map((u) => u.name),
    ["db/0", "web/0", "web/2"],
  );
  const web0 = view.units.find((u) => u.name === "web/0")!;
  t.deepEqual(web0.config, { greeting: "héllo <\u2028> \\ \u0001", port: 80 });
  t.true(web0.leader);
  t.true(web0.leaderSettingsVersion > 0);
  t.deepEqual(
    web0.relations.map((r) => [r.id, r.remoteApp, Object.keys(r.remoteUnits).sort()]),
    [
      [1, "db", ["db/0", "db/1"]],
      [2, "web", ["web/1", "web/2"]],
    ],
  );
  t.true(web0.relations[0]!.remoteAppVersion > 0);
  t.is(view.units.find((u) => u.name === "web/2")!.resolve, "retry");
  t.deepEqual(
    web0.actions,
    [
      { id: 7, action: "restart", params: { delay: 5, why: 'a "quoted" reason' } },
      { id: 12, action: "backup", params: {} },
      { id: 25, action: "restart", params: {} },
    ],
    "the three oldest queued actions, oldest first",
  );
  t.false("actions" in view.units.find((u) => u.name === "web/2")!, "a unit with nothing queued has no actions field");
  t.deepEqual([view.updateStatusInterval, view.retryHooks, view.leadershipLeaseSeconds], [42, false, 30]);
  t.deepEqual(view.controllerAddresses, addresses);
  t.is((JSON.parse(round.text(idx, "2")) as AgentView).machine.life, "dying");
  t.deepEqual(
    view.machineStorage?.map((w) => [w.id, w.op, w.destroy ?? false]),
    [
      ["data/0", "attach", false],
      ["data/1", "release", true],
    ],
    "the machine halves of its storage",
  );
  t.false("machineStorage" in (JSON.parse(round.text(idx, "1")) as AgentView), "none where the broker did it all");
});
