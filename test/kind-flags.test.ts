/**
 * A kind's command-line surface is data in its contract (api/substrate-kinds.ts `cli`), and the CLI
 * makes its options, settings, refusals and target word from it (cli/kind-flags.ts). Checked here
 * with a made-up seventh kind, parsed by clipanion itself: its flags become options with their
 * descriptions, fill its settings (a list, a file's contents), are refused for another kind naming
 * it, and its target word stands for its flag. And the six kinds' own: each contract's `flags` are
 * its `cli` flags, and bootstrap, add-model and set-replica-cloud take exactly the flags they should.
 */
import test from "ava";
import { Cli, Command, UsageError } from "clipanion";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelSubstrate, SubstrateContract } from "../api";
import { MODEL_SUBSTRATES, SUBSTRATE_CONTRACTS } from "../api";
import type { KindFlags } from "../cli";
import { buildCli, kindFlags, kindOfTarget, kindOptions, targetName } from "../cli";

/** A seventh kind, as a contract would declare it: four flags (one required, one a list, one a file) and a target word. */
const gce = {
  name: "gce" as ModelSubstrate,
  provisions: "machines",
  instances: true,
  words: { thing: "instance", things: "GCE instances", cloud: "Google Cloud" },
  flags: ["--project", "--zone", "--network", "--gce-ca-file"],
  cli: {
    flags: [
      { name: "--project", setting: "project", required: "a project id", description: "the project" },
      { name: "--zone", setting: "zone", description: "the zone (default: the project's)" },
      { name: "--network", setting: "networks", list: true, description: "a network (repeatable)" },
      { name: "--gce-ca-file", setting: "caCert", file: true, description: "the CA (PEM) that signs its API" },
    ],
    target: {
      word: "gce",
      aliases: ["gcp"],
      placeholder: "PROJECT",
      fills: {
        flag: "--project",
        what: "the project",
        example: "gce:my-project",
        normalise: (given: string) => given.toLowerCase(),
        place: "GCE",
      },
    },
  },
  describe: () => "GCE instances",
} satisfies SubstrateContract<any>;
const KINDS: readonly SubstrateContract<any>[] = [...MODEL_SUBSTRATES.map((k) => SUBSTRATE_CONTRACTS[k]), gce];

/** A command taking every kind's settings flags, the seventh's included, as add-model takes them. */
class PlaceCommand extends Command {
  static override paths = [["place"]];
  static override usage = Command.Usage({ description: "place machines of any kind" });
  readonly flags: KindFlags = kindFlags(this, "settings", KINDS);
  async execute(): Promise<number> {
    return 0;
  }
}

function parsed(...args: string[]): PlaceCommand {
  const cli = new Cli();
  cli.register(PlaceCommand);
  return cli.process(["place", ...args]) as PlaceCommand;
}

test("a seventh kind's flags become options, with their descriptions, found by clipanion as the command's", (t) => {
  const options = kindOptions("settings", KINDS);
  for (const name of gce.flags) t.true(name in options, `${name} is an option`);
  const cli = new Cli();
  cli.register(PlaceCommand);
  const [definition] = cli.definitions();
  const described = new Map(definition!.options.map((o) => [o.definition.split(" ")[0]!, o.description]));
  t.is(described.get("--project"), "gce: the project");
  t.is(described.get("--network"), "gce: a network (repeatable)");
  t.is(described.get("--region"), "aws: the region, e.g. eu-west-1", "the six kinds' flags are there too");
  t.false(described.has("--kubeconfig"), "a flag only a bootstrap takes is not a settings flag");
  t.throws(() => kindOptions("settings", [...KINDS, { ...gce, name: "gce2" as ModelSubstrate }]), {
    message: /--project is a flag of two kinds/,
  });
});

test("a seventh kind's settings come from its flags: a repeated flag is a list, a file flag its file's contents", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "kind-flags-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, "ca.pem"), "-----BEGIN CERTIFICATE-----\n");
  const command = parsed("--project", "p1", "--network", "a", "--network", "b", "--gce-ca-file", "ca.pem");
  t.true(command.flags.given(gce));
  t.false(command.flags.given(SUBSTRATE_CONTRACTS.aws));
  t.deepEqual(await command.flags.settings(gce, dir), {
    project: "p1",
    networks: ["a", "b"],
    caCert: "-----BEGIN CERTIFICATE-----\n",
  });
  await t.throwsAsync(parsed("--zone", "z").flags.settings(gce, dir), {
    instanceOf: UsageError,
    message: "gce needs --project (a project id)",
  });
  await t.throwsAsync(parsed("--project", "p", "--gce-ca-file", "missing.pem").flags.settings(gce, dir), {
    message: "cannot read missing.pem",
  });
});

test("a seventh kind's flags given for another kind are refused, naming it (or its target, as bootstrap does)", (t) => {
  const command = parsed("--zone", "z");
  t.is(command.flags.foreignProblem("aws"), "--project, --zone, --network and --gce-ca-file are for gce");
  t.is(
    command.flags.foreignProblem(undefined, targetName),
    "--project, --zone, --network and --gce-ca-file are for gce:PROJECT",
  );
  t.is(command.flags.foreignProblem(gce.name), undefined);
  t.is(
    parsed("--region", "r").flags.foreignProblem(gce.name),
    "--region, --image, --instance-type, --subnet, --security-group, --endpoint and --endpoint-ca-file are for aws",
  );
});

test("a seventh kind's target word (or an alias) names it and stands for its flag, normalised; the two must agree", (t) => {
  t.is(kindOfTarget("gce:P1", KINDS), gce);
  t.is(kindOfTarget("gcp:P1", KINDS), gce);
  t.is(kindOfTarget("gcex:P1", KINDS), undefined);
  t.is(kindOfTarget("aws:eu-west-1", KINDS), SUBSTRATE_CONTRACTS.aws);
  t.is(kindOfTarget("k8s:prod")?.name, "kubernetes");
  t.is(kindOfTarget("prod"), undefined);
  const command = parsed();
  t.is(command.flags.fillFromTarget(gce, "gce:P1"), "p1");
  t.is(command.flags.value("--project"), "p1");
  t.is(parsed("--project", "p1").flags.fillFromTarget(gce, "gce:"), "p1");
  t.throws(() => parsed().flags.fillFromTarget(gce, "gce:"), { message: "give the project: gce:my-project" });
  t.throws(() => parsed("--project", "p2").flags.fillFromTarget(gce, "gce:P1"), {
    message: "the project is given twice and differs: gce:P1 (p1) and --project p2",
  });
});

test("each of the six kinds' flags are its contract's cli flags, and each command takes the scope it should", (t) => {
  for (const name of MODEL_SUBSTRATES) {
    const c: SubstrateContract<any> = SUBSTRATE_CONTRACTS[name];
    t.deepEqual(
      c.flags,
      (c.cli?.flags ?? []).map((f) => f.name),
      `${name}: flags are its cli flags' names`,
    );
  }
  const takes = new Map(
    buildCli()
      .definitions()
      .map((d) => [d.path.split(" ").at(-1)!, d.options.map((o) => o.definition)]),
  );
  const option = (command: string, flag: string) => takes.get(command)!.some((d) => d.split(/[ ,]/).includes(flag));
  for (const name of MODEL_SUBSTRATES)
    for (const f of (SUBSTRATE_CONTRACTS[name] as SubstrateContract<any>).cli?.flags ?? []) {
      t.true(option("bootstrap", f.name), `bootstrap takes ${f.name}`);
      const settingsFlag = !("bootstrapOnly" in f);
      t.is(option("set-replica-cloud", f.name), settingsFlag, `set-replica-cloud and ${f.name}`);
    }
  // A bootstrap target is built from what its contract says: a cloud's target stands for a flag, a kind of pods has a word.
  for (const name of MODEL_SUBSTRATES) {
    const c: SubstrateContract<any> = SUBSTRATE_CONTRACTS[name];
    if (c.replicaHosts === "instances") t.truthy(c.cli?.target?.fills, `${name}: its target stands for a flag`);
    if (c.replicaHosts === "own-pods" || c.addMachines === "address") t.truthy(c.cli?.target, `${name}: a target word`);
  }
  t.true(option("add-model", "--vcenter-ca-file"));
  t.false(option("add-model", "--kubeconfig"));
});
