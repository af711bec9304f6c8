/**
 * A substrate kind is one descriptor: a static contract per kind (api/substrate-kinds.ts) and a
 * runtime half per folder (substrates/<kind>/kind.ts) found through one lazy registry. Checked here:
 * every kind has both and they agree; the registry loads a kind's folder only when it is asked for
 * (the CLI's status, models and add-model commands load no cloud at all); a model document of the
 * shape before placements (substrate, credential and a bag named after the kind), as older stores
 * and exports hold it, reads and imports as a placement.
 */
import test from "ava";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { SubstrateContract } from "../api";
import {
  CREDENTIAL_SUBSTRATES,
  CreateModelRequest,
  MODEL_SUBSTRATES,
  SUBSTRATE_CONTRACTS,
  describeIssues,
  settingsSchemaOf,
} from "../api";
import {
  MODEL_EXPORT_FORMAT,
  MODEL_EXPORT_VERSION,
  KIND,
  StateOps,
  exportModel,
  importModel,
  keys,
  modelDocOf,
  storedValue,
  upgradeModelExport,
} from "../controller";
import type { MachineHost } from "../substrates";
import { SUBSTRATES } from "../substrates";
import { storeWithCache } from "./harness/state";

/** A machine host no broker made here uses (none starts a machine). */
const NO_HOST: MachineHost = {
  machinesDir: "/nonexistent",
  agentEntry: "/nonexistent/agent.js",
  agents: { user: "nobody", dir: "/nonexistent", dataDir: "/nonexistent", asController: true },
};

test("every kind has one contract and one runtime half, and they agree", (t) => {
  for (const name of MODEL_SUBSTRATES) {
    const contract: SubstrateContract<any> = SUBSTRATE_CONTRACTS[name];
    t.is(contract.name, name);
    const kind = SUBSTRATES[name]();
    t.is(kind.contract, contract, `${name}: the runtime half carries the kind's contract`);
    if (contract.instances)
      t.truthy(kind.machines && kind.placement, `${name}: a kind of cloud instances has a broker and a placement`);
    t.is(
      kind.machines !== undefined,
      contract.provisions === "machines" || contract.addMachines === "address",
      `${name}: a machine broker exactly for the kinds whose machines the controller makes or installs`,
    );
    if (contract.addMachines === "address")
      t.truthy(
        kind.machines!(NO_HOST).admit,
        `${name}: a kind whose machines are added by address checks a host before it is recorded`,
      );
    t.is(
      kind.controller !== undefined,
      contract.hostsControllers === true,
      `${name}: controller hosting exactly for the kinds whose contract says they host controllers`,
    );
    t.is(
      settingsSchemaOf(name) !== undefined,
      "settings" in contract,
      `${name}: a schema exactly for the kinds that take settings`,
    );
    t.is(
      (CREDENTIAL_SUBSTRATES as readonly string[]).includes(name),
      "credential" in contract,
      `${name}: a credential kind exactly for the kinds that take one`,
    );
  }
  t.is(
    SUBSTRATE_CONTRACTS.aws.describe({
      region: "eu-west-1",
      imageId: "ami-0123456789abcdef0",
      instanceType: "t3.small",
    }),
    "eu-west-1, t3.small",
  );
  t.is(
    SUBSTRATE_CONTRACTS.vsphere.describe({ url: "https://vc/sdk", datacenter: "DC0", template: "deb" }),
    "DC0, template deb",
  );
  t.is(
    SUBSTRATE_CONTRACTS.kubernetes.describe({ namespace: "ctl", statefulSet: "steward" }),
    "StatefulSet ctl/steward",
  );
});

test("a kind's folder is loaded on first use only: status, models and add-model load no cloud", (t) => {
  // A fresh process, so nothing another test loaded counts.
  const script = `
    const loaded = (what) => Object.keys(require.cache).filter((k) => k.includes("/dist/substrates/" + what + "/")).length;
    for (const c of ["status", "models", "add-model"]) require(${JSON.stringify(join(__dirname, "..", "cli", "commands"))} + "/" + c + ".js");
    const before = { aws: loaded("aws"), vsphere: loaded("vsphere"), kubernetes: loaded("kubernetes") };
    const { SUBSTRATES } = require(${JSON.stringify(join(__dirname, "..", "substrates", "registry.js"))});
    SUBSTRATES.local();
    const afterLocal = loaded("aws");
    SUBSTRATES.aws();
    console.log(JSON.stringify({ before, afterLocal, afterAws: loaded("aws"), vsphere: loaded("vsphere") }));`;
  const out = JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" })) as {
    before: Record<string, number>;
    afterLocal: number;
    afterAws: number;
    vsphere: number;
  };
  t.deepEqual(out.before, { aws: 0, vsphere: 0, kubernetes: 0 }, "the CLI's everyday commands load no substrate kind");
  t.is(out.afterLocal, 0, "loading local loads no other kind");
  t.true(out.afterAws > 0, "asking for aws loads its folder");
  t.is(out.vsphere, 0, "and only its folder");
});

test("a model request is one shape per kind: what is missing or misplaced is named with how to fix it", (t) => {
  const problem = (body: unknown): string => {
    const r = CreateModelRequest.safeParse(body);
    return r.success ? "" : describeIssues(r.error.issues);
  };
  t.is(
    problem({ name: "a", substrate: "aws" }),
    '"credential" is required for an aws model: store one with steward add-credential NAME --substrate aws; "settings" is required for an aws model: at least region and imageId',
  );
  t.is(
    problem({ name: "a", substrate: "gcp" }),
    '"substrate" must be one of local, manual, ssh, aws, vsphere, kubernetes',
  );
  t.is(
    problem({ name: "a", settings: { region: "eu-west-1" } }),
    '"settings" are not for a local model: it takes none',
  );
  t.regex(
    problem({ name: "a", substrate: "kubernetes", credential: "c", constraints: "cores=2" }),
    /"constraints" are for machines Steward makes on a cloud; a kubernetes model's units are pods/,
  );
  // As clients of the previous minor send them: settings under the kind's name.
  const legacy = CreateModelRequest.parse({
    name: "a",
    substrate: "aws",
    credential: "p",
    aws: { region: "eu-west-1", imageId: "ami-0123456789abcdef0" },
  });
  t.deepEqual(legacy.settings, { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" });
  t.is(
    problem({ name: "a", vsphere: { url: "https://vc/sdk", datacenter: "DC0", template: "t" } }),
    '"vsphere" is only for vsphere models, not local',
  );
});

const OLD_AWS_MODEL = {
  uuid: "0b0e9a52-3c1a-4c53-9d1e-7d1a2f3b4c5d",
  name: "shop",
  owner: "admin",
  life: "alive",
  createdAt: "2026-11-01T00:00:00.000Z",
  config: { updateStatusInterval: 300 },
  substrate: "aws",
  credential: "prod",
  aws: { region: "eu-west-1", imageId: "ami-0123456789abcdef0", instanceType: "t3.small" },
  constraints: { cores: 2 },
};

test("a model document of the shape before placements reads as one placement", (t) => {
  const doc = modelDocOf(OLD_AWS_MODEL);
  t.deepEqual(doc.placement, { substrate: "aws", credential: "prod", settings: OLD_AWS_MODEL.aws });
  t.false("aws" in doc || "substrate" in doc || "credential" in doc);
  t.deepEqual(doc.constraints, { cores: 2 });
  // Older still: no substrate at all is local.
  t.deepEqual(modelDocOf({ ...OLD_AWS_MODEL, substrate: undefined, credential: undefined, aws: undefined }).placement, {
    substrate: "local",
    settings: {},
  });
  t.deepEqual(modelDocOf(doc), doc, "a current document reads as itself");
});

test("a model is stored in both shapes during the upgrade window: the previous build reads its old fields, this one the placement", (t) => {
  const doc = modelDocOf(OLD_AWS_MODEL);
  // Format 1: a store some replica of the previous build may still read.
  const stored = JSON.parse(storedValue(KIND.model, doc, 1)) as Record<string, unknown>;
  // What the previous build reads (substrate, credential, the bag named after the kind) is all there.
  t.is(stored.substrate, "aws");
  t.is(stored.credential, "prod");
  t.deepEqual(stored.aws, OLD_AWS_MODEL.aws);
  t.deepEqual(stored.placement, doc.placement);
  // Read back, the old fields are gone and nothing else changed.
  t.deepEqual(modelDocOf(JSON.parse(JSON.stringify(stored))), doc);
  t.false("aws" in modelDocOf(stored));
  // A kind without settings stores no empty bag.
  const local = JSON.parse(
    storedValue(
      KIND.model,
      modelDocOf({ ...OLD_AWS_MODEL, substrate: "local", credential: undefined, aws: undefined }),
      1,
    ),
  ) as Record<string, unknown>;
  t.is(local.substrate, "local");
  t.false("local" in local);
  // Once the store is migrated to format 2 no replica reads the old fields: the placement alone is stored.
  t.deepEqual(JSON.parse(storedValue(KIND.model, doc, 2)), doc);
});

test("an export of the previous build (version 2, the model without a placement) imports, and the model is stored with one", async (t) => {
  const { store } = await storeWithCache(t, "kinds");
  const ops = new StateOps(store);
  // The credential it names, here first (as an import needs; its sealed attributes are not read).
  await store.put(
    keys.credential("prod"),
    JSON.stringify({
      name: "prod",
      substrate: "aws",
      owner: "admin",
      createdAt: "",
      shown: {},
      sealed: "s",
      models: [],
    }),
  );
  const old = {
    format: MODEL_EXPORT_FORMAT,
    version: 2,
    exportedAt: "2026-11-01T00:00:00.000Z",
    source: { controller: "src", controllerName: "src", revision: 10 },
    documents: { model: { "": OLD_AWS_MODEL }, "machine-seq": { "": 0 } },
    versions: { revision: 10, bags: {} },
    operators: {},
    references: { credential: "prod" },
  };
  t.deepEqual((upgradeModelExport(structuredClone(old)).documents.model![""] as { placement: unknown }).placement, {
    substrate: "aws",
    credential: "prod",
    settings: OLD_AWS_MODEL.aws,
  });
  const res = await importModel(
    {
      store,
      leaseSeconds: 60,
      putOperator: (b) => ops.operators.upload(b, { quotaBytes: 1 << 30 }),
      checkLocalDir: async () => undefined,
    },
    old,
  );
  t.is(res.uuid, OLD_AWS_MODEL.uuid);
  const stored = JSON.parse((await store.get(keys.model(OLD_AWS_MODEL.uuid)))!.value) as Record<string, unknown>;
  t.deepEqual(stored.placement, { substrate: "aws", credential: "prod", settings: OLD_AWS_MODEL.aws });
  t.deepEqual(stored.aws, OLD_AWS_MODEL.aws, "stored for the previous build's replicas too");
  // Exported again, it is the current version with the placement, and only that.
  const again = await exportModel(store, OLD_AWS_MODEL.uuid);
  t.is(again.version, MODEL_EXPORT_VERSION);
  const exported = again.documents.model![""] as Record<string, unknown>;
  t.deepEqual(exported.placement, stored.placement);
  t.false("aws" in exported || "substrate" in exported || "credential" in exported);
});
