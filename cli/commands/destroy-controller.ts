import { Command, Option, UsageError } from "clipanion";
import type { InstanceCloudSubstrate } from "../../api/core";
import { ControllerClient, SUBSTRATE_CONTRACTS, destroyAllModels, substratesWhere } from "../../api/core";
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
    // A controller on a cloud is recorded under the cloud's name, with its settings and the UUID its instances are marked with.
    const cloud = substratesWhere((k) => k.replicaHosts === "instances").find(
      (k) => entry[k as InstanceCloudSubstrate],
    ) as InstanceCloudSubstrate | undefined;
    const onCloud = cloud ? entry[cloud] : undefined;
    if (!entry.dataDir && !onCloud)
      throw new UsageError(
        `controller "${this.name}" was bootstrapped over SSH; destroy-controller handles controllers on this host, on EC2 and on vSphere only for now`,
      );
    if (!this.yes)
      throw new UsageError(
        `this destroys controller "${this.name}", all its models and their machines: pass --yes to confirm`,
      );
    if (cloud && this.credentialFile === undefined && !this.fromEnv) {
      const words = SUBSTRATE_CONTRACTS[cloud].words;
      throw new UsageError(
        `a controller on ${words.cloud}: give the ${words.cloud} credential to remove its ${words.things} with, --credential-file FILE [--profile P] or --from-env (${words.env})`,
      );
    }
    // Read before anything is destroyed, so a wrong file stops it here.
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
    // Loaded only here: the substrates package brings node-ssh, which most commands never need.
    const { destroyController } = require("../../substrates") as typeof Substrates;
    const progress = (l: string): void => this.progress(l);
    if (cloud && onCloud)
      await destroyController<InstanceCloudSubstrate>(
        cloud,
        { uuid: onCloud.uuid, settings: onCloud.settings, credential: attributes! },
        { progress },
      );
    else await destroyController("local", { settings: { dataDir: entry.dataDir! } }, { progress });
    delete cfg.controllers[this.name];
    if (cfg.current === this.name) delete cfg.current;
    await this.saveConfig(cfg);
    this.out(`Controller "${this.name}" destroyed.`);
    return 0;
  }
}
