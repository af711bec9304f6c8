/** The compact status form's table codec: what goes in comes back, key order included, or stays plain. */
import test from "ava";
import type { ModelStatus } from "../api";
import { expandStatusColumns, fromColumnTable, statusToColumns, toColumnTable } from "../api";

const roundTrip = <T>(r: Record<string, T>): Record<string, T> =>
  fromColumnTable(JSON.parse(JSON.stringify(toColumnTable(r))) as Record<string, T>);

test("rows with fields that appear only in later rows come back equal and in their key order", (t) => {
  const rows = {
    "web/0": { name: "web/0", workload: { current: "active", message: "", since: "t0" }, ports: [] },
    "web/1": {
      name: "web/1",
      workload: { current: "blocked", message: "no db", since: "t1" },
      address: "10.0.0.2",
      ports: ["80/tcp"],
    },
    "web/2": {
      name: "web/2",
      instance: { id: "i-1", state: "running" },
      workload: { current: "active", message: "", since: "t2" },
      ports: [],
    },
    "web/3": {
      name: "web/3",
      instance: { id: "i-2", zone: "a", state: "running" },
      workload: { current: "active", message: "", since: "t3" },
      leader: false,
      count: 0,
    },
  };
  const table = toColumnTable(rows);
  t.true("$columns" in table, "a record of similar objects becomes a table");
  const back = roundTrip(rows);
  t.deepEqual(back, rows);
  t.is(JSON.stringify(back), JSON.stringify(rows), "each row's keys keep their order");
});

test("records a table would not keep exactly stay plain", (t) => {
  for (const r of [
    {},
    { a: { x: null } },
    { a: { x: {} } },
    { a: 1 },
    { a: [1] },
    JSON.parse('{"__proto__": {"x": 1}}') as Record<string, unknown>,
    JSON.parse('{"a": {"__proto__": {"x": 1}}}') as Record<string, unknown>,
  ]) {
    t.is(toColumnTable(r), r);
  }
});

test("a malformed table is refused rather than read into the wrong shape or a prototype", (t) => {
  const bad = [
    { $columns: { keys: ["a"], paths: [["x"]], values: [] } },
    { $columns: { keys: ["a"], paths: [["x"]], values: [[1, 2]] } },
    { $columns: { keys: ["a"], paths: [["__proto__", "polluted"]], values: [[1]] } },
    { $columns: { keys: ["__proto__"], paths: [["x"]], values: [[1]] } },
    { $columns: { keys: ["a"], paths: [[]], values: [[1]] } },
    { $columns: "nope" },
  ];
  for (const b of bad) t.throws(() => fromColumnTable(b as never), { message: /malformed status table/ });
  t.is(({} as Record<string, unknown>).polluted, undefined);
});

test("a whole status document survives the compact form", (t) => {
  const since = "2026-11-23T00:00:00.000Z";
  const unit = (n: number): ModelStatus["applications"][string]["units"][string] => ({
    name: `web/${n}`,
    machine: String(n),
    leader: n === 0,
    life: "alive",
    workload: { current: "active", message: `unit ${n}`, since },
    agent: { current: "idle", message: "", since },
    ...(n % 2 ? { address: `10.0.0.${n}` } : {}),
    ports: n === 1 ? ["8080/tcp"] : [],
  });
  const status: ModelStatus = {
    model: { name: "m", uuid: "u", controller: "c", status: { current: "available", message: "", since }, revision: 7 },
    applications: {
      web: {
        name: "web",
        operator: { name: "hello", version: "1", hash: "h" },
        status: { current: "active", message: "", since },
        version: "",
        life: "alive",
        scale: 3,
        units: { "web/0": unit(0), "web/1": unit(1), "web/2": unit(2) },
        config: { port: 8080 },
      },
      idle: {
        name: "idle",
        operator: { name: "motd", version: "1", hash: "g" },
        status: { current: "unknown", message: "", since },
        version: "",
        life: "alive",
        scale: 0,
        units: {},
        config: {},
      },
    },
    machines: {
      "0": {
        id: "0",
        substrate: "aws",
        status: { current: "started", message: "", since },
        address: "10.0.0.10",
        hostname: "h0",
        life: "alive",
        units: ["web/0"],
        instance: { id: "i-0", zone: "eu-west-1a", state: "running" },
      },
      "1": {
        id: "1",
        substrate: "manual",
        status: { current: "down", message: "agent gone", since },
        address: "",
        hostname: "",
        life: "dying",
        units: [],
      },
    },
    integrations: [{ id: 1, provider: "web:db", requirer: "db:db", interface: "pg", type: "regular", life: "alive" }],
    timestamp: since,
  };
  const wire = JSON.stringify(statusToColumns(status));
  t.true(wire.includes("$columns"));
  t.is(JSON.stringify(expandStatusColumns(JSON.parse(wire))), JSON.stringify(status));
  // A plain document (an older controller's) reads as it is.
  t.deepEqual(expandStatusColumns(JSON.parse(JSON.stringify(status))), status);
});
