import { Command, Option, UsageError } from "clipanion";
import type { CredentialSubstrate } from "../../api/core";
import { ControllerClient, MODEL_SUBSTRATES, SUBSTRATE_CONTRACTS, contractOf, destroyAllModels } from "../../api/core";
import type * as Substrates from "../../substrates";
import { BaseCommand } from "../base-command";
import { cloudCredentialEnv, cloudKinds } from "../bootstrap-targets";
import { readCredentialAttributes } from "../credential-file";
import { DURATION_HELP, isDuration } from "../validators";

export default class DestroyControllerCommand extends BaseCommand {
  static override paths = [["destroy-controller"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "destroy a controller (on this host, on EC2 or on vSphere) and everything it runs",
    details: `
      Destroys every model (running each unit's stop and remove hooks, up to \`--timeout\`), then stops
      the controller and any agents it started, deletes its data directory and forgets it. Works for
      controllers bootstrapped on this host, and on EC2 (\`bootstrap aws:\`): there it then terminates
      every instance tagged with the controller (its replicas, those it launched itself included, and
      any machine a model left), with the AWS credential given again (\`--credential-file\` or
      \`--from-env\`: this client never keeps it). On vSphere (\`bootstrap vsphere:\`) it destroys
      every VM marked with the controller (\`guestinfo.steward.controller\`), with the vSphere account
      given again the same way. Asks for \`--yes\`: this cannot be undone.
    `,
    examples: [
      ["Destroy the controller called local", "$0 destroy-controller local --yes"],
      [
        "Destroy a controller on EC2 and terminate its instances",
        "$0 destroy-controller prod --yes --credential-file ~/.aws/credentials --profile prod",
      ],
      ["Destroy a controller on vSphere and its VMs", "$0 destroy-controller prod --yes --from-env"],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  yes = Option.Boolean("-y,--yes", false, { description: "Confirm the destruction" });
  timeout = Option.String("--timeout", "60s", {
    description: "How long to wait for models to be destroyed cleanly before forcing: " + DURATION_HELP,
    validator: isDuration(),
  });
  credentialFile = Option.String("--credential-file", {
    description: `${cloudKinds()}: the credential to remove the instances or VMs with (INI, JSON or YAML)`,
  });
  profile = Option.String("--profile", "default", {
    description: `${cloudKinds()}: the profile in --credential-file's INI`,
  });
  fromEnv = Option.Boolean("--from-env", false, {
    description: `${cloudKinds()}: read the credential from ${cloudCredentialEnv()}`,
  });

  async run(): Promise<number> {
    const cfg = await this.clientConfig();
    const entry = cfg.controllers[this.name];
    if (!entry)
      throw new UsageError(
        `controller "${this.name}" is not known here (known: ${Object.keys(cfg.controllers).join(", ") || "none"})`,
      );
    // The kind it runs on, as bootstrap recorded it, says what to take away and whether a credential is needed for it.
    const recorded = entry.hosting;
    const { hostingOf } = loadSubstrates();
    const hosting = recorded ? hostingOf(recorded) : undefined;
    if (!recorded || !hosting?.destroyable)
      throw new UsageError(
        `controller "${this.name}" ${recorded ? `runs on ${SUBSTRATE_CONTRACTS[recorded.substrate].words.cloud} (${SUBSTRATE_CONTRACTS[recorded.substrate].words.things})` : "was not bootstrapped by this client"}; destroy-controller handles controllers on ${destroyableHere().join(", ")} only for now`,
      );
    if (!this.yes)
      throw new UsageError(
        `this destroys controller "${this.name}", all its models and their machines: pass --yes to confirm`,
      );
    // A cloud's credential is given again (this client never keeps it): read before anything is destroyed, so a wrong file stops it here.
    const contract = contractOf(recorded.substrate);
    const cloud = contract.credential ? (recorded.substrate as CredentialSubstrate) : undefined;
    if (cloud && this.credentialFile === undefined && !this.fromEnv) {
      const words = contract.words;
      throw new UsageError(
        `a controller on ${words.cloud}: give the ${words.cloud} credential to remove its ${words.things} with, --credential-file FILE [--profile P] or --from-env (${words.env})`,
      );
    }
    const attributes = cloud
      ? await readCredentialAttributes(this.context, cloud, {
          file: this.credentialFile,
          profile: this.profile,
          fromEnv: this.fromEnv,
        })
      : undefined;

    const client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: entry.user,
      ...(entry.password ? { password: entry.password } : {}),
      timeoutMs: 5000,
    });
    try {
      await destroyAllModels(client, this.timeout, (l) => this.progress(l));
    } finally {
      client.close();
    }
    await hosting.destroy(
      {
        settings: hosting.destroyable(recorded.settings),
        ...(recorded.uuid ? { uuid: recorded.uuid } : {}),
        ...(attributes ? { credential: attributes } : {}),
      },
      { progress: (l) => this.progress(l) },
    );
    delete cfg.controllers[this.name];
    if (cfg.current === this.name) delete cfg.current;
    await this.saveConfig(cfg);
    this.out(`Controller "${this.name}" destroyed.`);
    return 0;
  }
}

/** The substrates package, loaded on first use: it brings node-ssh and the clouds' clients, which most commands never need. */
function loadSubstrates(): typeof Substrates {
  return require("../../substrates") as typeof Substrates;
}

/** Where the controllers are that this command can destroy from what bootstrap recorded ("this host", "AWS"…), for its refusal. */
function destroyableHere(): string[] {
  const { SUBSTRATES } = loadSubstrates();
  return MODEL_SUBSTRATES.filter((k) => SUBSTRATES[k]().controller?.destroyable).map(
    (k) => SUBSTRATE_CONTRACTS[k].words.cloud,
  );
}
