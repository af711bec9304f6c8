import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";

export default class AddModelCommand extends ControllerCommand {
  static override paths = [["add-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "create a model and make it current",
    details: "A model holds applications, their units and the machines they run on. The new model becomes the current one for later commands.",
    examples: [["Create a model called demo", "$0 add-model demo"], ["Run update-status every minute", "$0 add-model demo --update-status-interval 1m"]],
  });

  name = Option.String({ required: true, name: "name" });
  interval = Option.String("--update-status-interval", { description: "How often units run update-status (default 5m): " + DURATION_HELP, validator: isDuration() });

  async run(): Promise<number> {
    const client = await this.connect();
    const config = this.interval !== undefined ? { updateStatusInterval: Math.round(this.interval / 1000) } : undefined;
    const m = await client.createModel(this.name, config);
    const { name, cfg } = await this.resolveController();
    cfg.controllers[name]!.currentModel = m.name;
    await this.saveConfig(cfg);
    this.out(`Added model "${m.name}" (${m.uuid}) and made it current.`);
    return 0;
  }
}
