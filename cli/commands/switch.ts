import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class SwitchCommand extends ControllerCommand {
  static override paths = [["switch"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "make a model the current one",
    examples: [["Work on model prod from now on", "$0 switch prod"]],
  });

  name = Option.String({ required: true, name: "model" });

  async run(): Promise<number> {
    const client = await this.connect();
    await client.status(this.name); // fails clearly if it does not exist or you cannot read it
    const { name, cfg } = await this.resolveController();
    cfg.controllers[name]!.currentModel = this.name;
    await this.saveConfig(cfg);
    this.out(`Current model is now "${this.name}" on controller "${name}".`);
    return 0;
  }
}
