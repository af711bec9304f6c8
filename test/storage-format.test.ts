/**
 * The storage format without a controller (issue 32): `storage:` in operator.yaml (each problem named
 * with its field and line), the hooks a store brings, sizes, count ranges and `--storage` requests.
 */
import test from "ava";
import type { Bundle, ModelSubstrate, StewardError } from "../api";
import {
  contractOf,
  parseCountRange,
  parseOperatorYaml,
  parsePoolAttributes,
  parseSizeMiB,
  parseStorageArg,
  validateBundle,
} from "../api";
import { storageDirectives } from "../controller";
import { operatorYamlWith, yamlProblem as problem } from "./harness/operators";

const yaml = operatorYamlWith("storage");

test("operator.yaml: storage entries are read with their defaults", (t) => {
  const meta = parseOperatorYaml(
    yaml(
      '  data:\n    type: filesystem\n    location: /srv/data\n    minimum-size: 2G\n    multiple: {range: "1-3"}\n  raw:\n    type: block\n    read-only: true\n',
    ),
  );
  t.deepEqual(meta.storage, {
    data: {
      type: "filesystem",
      location: "/srv/data",
      minimumSize: 2048,
      count: { min: 1, max: 3 },
      readOnly: false,
      shared: false,
    },
    raw: { type: "block", minimumSize: 1024, count: { min: 1, max: 1 }, readOnly: true, shared: false },
  });
  t.is(parseOperatorYaml('name: op\nversion: "1"\n').storage, undefined, "no storage: no field");
});

test("operator.yaml: storage mistakes name the field and the line", (t) => {
  t.regex(problem(yaml("  data:\n    location: /x\n")), /"storage\.data\.type" is required/);
  t.regex(
    problem(yaml("  data:\n    type: tape\n")),
    /operator\.yaml:5: "storage\.data\.type" is required and must be/,
  );
  t.regex(problem(yaml("  data:\n    type: filesystem\n    size: 1G\n")), /"storage\.data\.size" is not a known/);
  t.regex(problem(yaml("  data:\n    type: filesystem\n    minimum-size: lots\n")), /"storage\.data\.minimum-size"/);
  t.regex(
    problem(yaml('  data:\n    type: filesystem\n    multiple: {range: "3-1"}\n')),
    /operator\.yaml:6: "storage\.data\.multiple\.range" must be a count or a range/,
  );
  t.regex(problem(yaml("  data:\n    type: filesystem\n    location: srv\n")), /"storage\.data\.location" must be/);
  t.regex(problem(yaml("  data:\n    type: block\n    location: /srv\n")), /applies to filesystem storage only/);
  t.regex(problem(yaml("  data:\n    type: filesystem\n    shared: yes please\n")), /"storage\.data\.shared"/);
  t.regex(problem(yaml("  Data:\n    type: filesystem\n")), /"storage\.Data" is not a valid storage name/);
  t.regex(
    problem(yaml("  a:\n    type: filesystem\n    location: /s\n  b:\n    type: filesystem\n    location: /s\n")),
    /"storage\.b\.location" is also storage "a"'s location/,
  );
});

test("storage hooks are hooks the operator may carry", (t) => {
  const file = (path: string, text: string, mode = 0o755) => ({
    path,
    mode,
    content: Buffer.from(text).toString("base64"),
  });
  const bundle = (hooks: string[]): Bundle => ({
    files: [
      file("operator.yaml", yaml("  data:\n    type: filesystem\n"), 0o644),
      ...hooks.map((h) => file(`hooks/${h}`, "#!/bin/sh\n")),
    ],
  });
  t.truthy(validateBundle(bundle(["install", "data-storage-attached", "data-storage-detaching"])).storage?.data);
  t.throws(() => validateBundle(bundle(["logs-storage-attached"])), { message: /is not a hook this operator/ });
});

test("sizes, count ranges and --storage requests", (t) => {
  t.is(parseSizeMiB("1G"), 1024);
  t.is(parseSizeMiB("512M"), 512);
  t.is(parseSizeMiB("2TiB"), 2 * 1024 * 1024);
  t.is(parseSizeMiB("0G"), undefined);
  t.is(parseSizeMiB("1.5G"), undefined);
  t.deepEqual(parseCountRange("2-"), { min: 2, max: 64 });
  t.deepEqual(parseCountRange("2"), { min: 2, max: 2 });
  t.is(parseCountRange("0"), undefined);
  t.deepEqual(parseStorageArg("data=local,1G,2"), { name: "data", request: { pool: "local", size: 1024, count: 2 } });
  t.deepEqual(parseStorageArg("data=3,2G"), { name: "data", request: { count: 3, size: 2048 } });
  t.deepEqual(parseStorageArg("data=rootfs"), { name: "data", request: { pool: "rootfs" } });
  t.throws(() => parseStorageArg("data=1G,2G"), { message: /the size is given twice/ });
  t.throws(() => parseStorageArg("data"), { message: /must be name=pool,size,count/ });
  t.throws(() => parseStorageArg("data=local,0"), { message: /count must be 1 to 64/ });
});

test("create-storage-pool's key=value attributes, and what a local pool's location accepts", (t) => {
  t.deepEqual(parsePoolAttributes(["location=/srv/fast", "note=a=b"]), { location: "/srv/fast", note: "a=b" });
  t.deepEqual(parsePoolAttributes([]), {});
  t.throws(() => parsePoolAttributes(["location"]), { message: /"location" is not an attribute: give key=value/ });
  t.throws(() => parsePoolAttributes(["=x"]), { message: /is not an attribute/ });
  t.throws(() => parsePoolAttributes(["a=1", "a=2"]), { message: /attribute "a" is given twice/ });
  const local = contractOf("local").storagePools![0]!;
  const location = local.attributes!.find((a) => a.name === "location")!;
  t.is(location.problem("/srv/fast"), undefined);
  for (const bad of ["srv/fast", "/srv/../etc", "", "/a\nb"])
    t.regex(location.problem(bad) ?? "", /absolute path/, bad);
});

test("deploy's storage directives: a shared or read-only store, or block storage on a filesystem pool, is refused naming the rule", (t) => {
  const meta = (entry: string) => parseOperatorYaml(yaml(`  data:\n${entry}`));
  const refusal = (entry: string, substrate: ModelSubstrate = "local") => {
    try {
      storageDirectives(meta(entry), substrate);
      return undefined;
    } catch (err) {
      return err as StewardError;
    }
  };
  t.deepEqual(storageDirectives(meta("    type: filesystem\n    minimum-size: 64M\n"), "local"), {
    data: { pool: "local", size: 64, count: 1 },
  });
  const shared = refusal("    type: filesystem\n    shared: true\n");
  t.is(shared?.reason, "storage-not-supported");
  t.regex(shared?.message ?? "", /storage "data" is shared, and pool "local" cannot share an instance/);
  const readOnly = refusal("    type: filesystem\n    read-only: true\n", "ssh");
  t.is(readOnly?.reason, "storage-not-supported");
  t.regex(
    readOnly?.message ?? "",
    /storage "data" is read-only, and pool "rootfs" cannot attach an instance read-only/,
  );
  const block = refusal("    type: block\n");
  t.is(block?.reason, "storage-not-supported");
  t.regex(block?.message ?? "", /storage "data" is block storage, and pool "local" gives filesystem storage only/);
});
