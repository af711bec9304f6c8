import { Command, Option } from "clipanion";
import * as t from "typanion";
import { MODEL_SUBSTRATES } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";

export default class AddModelCommand extends ControllerCommand {
  static override paths = [["add-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "create a model and make it current",
    details: "A model holds applications, their units and the machines they run on. The new model becomes the current one for later commands.\n\nIts substrate says where machines come from when units are placed without --to: `local` (the default) starts agents as processes on the controller's host; `ssh` and `manual` models use only machines added to them with add-machine (deploy and add-unit then need --to).",
    examples: [["Create a model called demo", "$0 add-model demo"], ["A model of SSH hosts", "$0 add-model shop --substrate ssh"], ["Run update-status every minute", "$0 add-model demo --update-status-interval 1m"]],
  });

  name = Option.String({ required: true, name: "name" });
  substrate = Option.String("--substrate", { description: `Where machines come from: ${MODEL_SUBSTRATES.join(", ")} (default local)`, validator: t.isEnum(MODEL_SUBSTRATES) });
  credential = Option.String("--credential", { description: "Stored credential its machines are made with (steward add-credential)" });
  interval = Option.String("--update-status-interval", { description: "How often units run update-status (default 5m): " + DURATION_HELP, validator: isDuration() });

  async run(): Promise<number> {
    const client = await this.connect();
    const config = this.interval !== undefined ? { updateStatusInterval: Math.round(this.interval / 1000) } : undefined;
    const m = await client.createModel(this.name, config, this.substrate, this.credential);
    const { name, cfg } = await this.resolveController();
    cfg.controllers[name]!.currentModel = m.name;
    await this.saveConfig(cfg);
    this.out(`Added model "${m.name}" (${m.uuid}, ${m.substrate} substrate${m.credential ? `, credential ${m.credential}` : ""}) and made it current.`);
    return 0;
  }
}
