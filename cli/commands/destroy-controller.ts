import { Command, Option, UsageError } from "clipanion";
import { ControllerClient, destroyAllModels } from "../../api/core";
import type * as Substrates from "../../substrates";
import { BaseCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";

export default class DestroyControllerCommand extends BaseCommand {
  static override paths = [["destroy-controller"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "destroy a controller on this host and everything it runs",
    details: `
      Destroys every model (running each unit's stop and remove hooks, up to \`--timeout\`), then stops
      the controller and any agents it started, deletes its data directory and forgets it. Works for
      controllers bootstrapped on this host. Asks for \`--yes\`: this cannot be undone.
    `,
    examples: [["Destroy the controller called local", "$0 destroy-controller local --yes"]],
  });

  name = Option.String({ required: true, name: "name" });
  yes = Option.Boolean("-y,--yes", false, { description: "Confirm the destruction" });
  timeout = Option.String("--timeout", "60s", { description: "How long to wait for models to be destroyed cleanly before forcing: " + DURATION_HELP, validator: isDuration() });

  async run(): Promise<number> {
    const cfg = await this.clientConfig();
    const entry = cfg.controllers[this.name];
    if (!entry) throw new UsageError(`controller "${this.name}" is not known here (known: ${Object.keys(cfg.controllers).join(", ") || "none"})`);
    if (!entry.dataDir) throw new UsageError(`controller "${this.name}" does not run on this host; destroy-controller only handles local controllers for now`);
    if (!this.yes) throw new UsageError(`this destroys controller "${this.name}", all its models and their machines: pass --yes to confirm`);

    const client = new ControllerClient({ addresses: entry.addresses, caCert: entry.caCert, user: entry.user, ...(entry.password ? { password: entry.password } : {}), timeoutMs: 5000 });
    try {
      await destroyAllModels(client, this.timeout, (l) => this.progress(l));
    } finally {
      client.close();
    }
    this.progress("Stopping the controller");
    // Loaded only here: the substrates package brings node-ssh, which most commands never need.
    const { removeLocalController } = require("../../substrates") as typeof Substrates;
    await removeLocalController(entry.dataDir);
    delete cfg.controllers[this.name];
    if (cfg.current === this.name) delete cfg.current;
    await this.saveConfig(cfg);
    this.out(`Controller "${this.name}" destroyed.`);
    return 0;
  }
}
