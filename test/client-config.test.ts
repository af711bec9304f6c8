/**
 * The CLI's controllers.json records where each controller it bootstrapped runs as one `hosting`
 * field, keyed by kind. Files written before that (one `dataDir`, `aws`, `vsphere` or `kubernetes`
 * key per kind) keep working: each entry is upgraded on load and the next save writes the new
 * shape. A real local controller is bootstrapped, its entry written back in the old shape, and the
 * commands that read the hosting (show, upgrade, destroy) are run against that file.
 */
import test from "ava";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClientConfig, ControllerEntry } from "../cli";
import { dataDirOf, loadClientConfig, upgradeEntry } from "../cli";
import { removeLocalController } from "../substrates";
import { bootstrapOnFreePort, cliRunner } from "./harness/cli";

const connection = { addresses: ["10.0.0.5:17070"], caCert: "CA", user: "admin", password: "pw" };
const aws = {
  region: "eu-west-1",
  imageId: "ami-0123456789abcdef0",
  instanceType: "t3.small",
  subnetIds: ["subnet-1"],
};
const vsphere = { url: "https://vc.example.com/sdk", datacenter: "dc1", template: "debian-12" };

/** An entry as clients before hostings wrote it. */
const old = (keys: Record<string, unknown>): ControllerEntry => ({ ...connection, ...keys }) as ControllerEntry;

test("each older shape becomes the same place as its hosting, and nothing else changes", (t) => {
  t.deepEqual(upgradeEntry(old({ dataDir: "/home/u/.steward/controllers/local", currentModel: "m" })), {
    ...connection,
    currentModel: "m",
    hosting: { substrate: "local", settings: { dataDir: "/home/u/.steward/controllers/local" } },
  });
  t.deepEqual(upgradeEntry(old({ aws: { settings: aws, uuid: "u-1" } })), {
    ...connection,
    hosting: { substrate: "aws", settings: aws, uuid: "u-1" },
  });
  t.deepEqual(upgradeEntry(old({ vsphere: { settings: vsphere, uuid: "u-2" } })), {
    ...connection,
    hosting: { substrate: "vsphere", settings: vsphere, uuid: "u-2" },
  });
  t.deepEqual(upgradeEntry(old({ kubernetes: { namespace: "steward", statefulSet: "prod", context: "admin@prod" } })), {
    ...connection,
    hosting: {
      substrate: "kubernetes",
      settings: { namespace: "steward", statefulSet: "prod", context: "admin@prod" },
    },
  });
  // Logged in to, registered, or bootstrapped over SSH before hostings: nothing recorded, nothing made up.
  t.deepEqual(upgradeEntry(old({})), connection);
  const current: ControllerEntry = { ...connection, hosting: { substrate: "ssh", settings: {}, uuid: "u-3" } };
  t.deepEqual(upgradeEntry(current), current, "an entry in the new shape is kept as it is");
  t.is(dataDirOf(upgradeEntry(old({ dataDir: "/d" }))), "/d");
  t.is(dataDirOf(upgradeEntry(old({ aws: { settings: aws, uuid: "u-1" } }))), undefined);
});

test("a user's controllers.json in the older shape keeps working, and is written in the new shape on the next save", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-client-config-"));
  const steward = cliRunner(home, home);
  let dataDir: string | undefined;
  try {
    const boot = await bootstrapOnFreePort(steward, "mine");
    t.is(boot.code, 0, boot.stderr);
    const file = join(home, "controllers.json");
    const bootstrapped = JSON.parse(await readFile(file, "utf8")) as ClientConfig;
    const entry = bootstrapped.controllers.mine!;
    t.is(entry.hosting?.substrate, "local", "bootstrap records the hosting keyed by kind");
    dataDir = dataDirOf(entry)!;
    t.is(dataDir, join(home, "controllers", "mine"));

    // The same controller, as an older client recorded it; beside it a cloud controller the way it recorded those.
    const { hosting: _hosting, ...connectionOnly } = entry;
    const before = {
      current: "mine",
      controllers: {
        mine: { ...connectionOnly, dataDir },
        ec2: { ...connection, aws: { settings: aws, uuid: "4f0e2b1c-0000-4000-8000-000000000001" } },
      },
    };
    await writeFile(file, JSON.stringify(before, null, 2), { mode: 0o600 });
    const loaded = await loadClientConfig(home);
    t.deepEqual(loaded.controllers.mine!.hosting, { substrate: "local", settings: { dataDir } });
    t.is(loaded.controllers.ec2!.hosting?.substrate, "aws");

    // Commands answer from it.
    const shown = await steward("show-controller", "-c", "mine");
    t.is(shown.code, 0, shown.stderr);
    const upgrade = await steward("upgrade-controller", "-c", "mine", "--dry-run");
    t.is(upgrade.code, 0, upgrade.stderr);
    t.regex(upgrade.stdout, /is already at/, "upgraded as a local controller (this build is what it runs)");
    // --image is for a kind whose upgrade takes an image: the local hosting's does not ask for it.
    const image = await steward("upgrade-controller", "-c", "mine", "--dry-run", "--image", "x/y:1");
    t.is(image.code, 1);
    t.regex(image.stderr + image.stdout, /--kubeconfig, --kube-context and --image are for a controller on Kubernetes/);

    // The older aws entry is read as a controller on AWS: its credential is asked for before anything is destroyed.
    const cloud = await steward("destroy-controller", "ec2", "--yes");
    t.is(cloud.code, 1);
    t.regex(
      cloud.stderr + cloud.stdout,
      /a controller on AWS: give the AWS credential to remove its EC2 instances with/,
    );

    // A command that saves the file writes every entry in the new shape, the older keys gone.
    const added = await steward("add-model", "m1", "-c", "mine");
    t.is(added.code, 0, added.stderr);
    const saved = JSON.parse(await readFile(file, "utf8")) as { controllers: Record<string, Record<string, unknown>> };
    for (const e of Object.values(saved.controllers))
      for (const key of ["dataDir", "aws", "vsphere", "kubernetes"]) t.false(key in e, `no ${key} key left`);
    t.deepEqual(saved.controllers.mine!.hosting, { substrate: "local", settings: { dataDir } });
    t.is(saved.controllers.mine!.currentModel, "m1", "the save that wrote the new shape is add-model's");
    t.deepEqual(saved.controllers.ec2!.hosting, {
      substrate: "aws",
      settings: aws,
      uuid: "4f0e2b1c-0000-4000-8000-000000000001",
    });

    // And the local controller recorded the old way is destroyed from it: its data directory goes.
    const destroyed = await steward("destroy-controller", "mine", "--yes", "--timeout", "10s");
    t.is(destroyed.code, 0, destroyed.stderr);
    t.false(existsSync(dataDir), "its data directory is removed");
    t.false("mine" in (await loadClientConfig(home)).controllers);
  } finally {
    if (dataDir) await removeLocalController(dataDir).catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  }
});

test("destroy-controller refuses, naming where it can destroy, a controller it cannot take away from its record", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-client-config-"));
  const steward = cliRunner(home, home);
  try {
    await writeFile(
      join(home, "controllers.json"),
      JSON.stringify({
        controllers: {
          k8s: { ...connection, kubernetes: { namespace: "steward", statefulSet: "k8s" } },
          known: connection,
        },
      }),
      { mode: 0o600 },
    );
    const k8s = await steward("destroy-controller", "k8s", "--yes");
    t.is(k8s.code, 1);
    t.regex(
      k8s.stderr + k8s.stdout,
      /controller "k8s" runs on Kubernetes \(pods\); destroy-controller handles controllers on this host, AWS, vSphere only for now/,
    );
    const known = await steward("destroy-controller", "known", "--yes");
    t.is(known.code, 1);
    t.regex(known.stderr + known.stdout, /controller "known" was not bootstrapped by this client/);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});
