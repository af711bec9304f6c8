import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class SwitchCommand extends ControllerCommand {
  static override paths = [["switch"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "make a model the current one",
    details: `
      The model's controller (\`-c\`, or the one the model moved to) becomes the current controller too.
    `,
    examples: [
      ["Work on model prod from now on", "$0 switch prod"],
      ["Model prod of controller lab", "$0 switch -c lab prod"],
    ],
  });

  name = Option.String({ required: true, name: "model" });

  async run(): Promise<number> {
    const client = await this.connect();
    await client.status(this.name); // fails clearly if it does not exist or you cannot read it
    // The controller the model is on: the one asked, or the one it moved to (the status call followed it).
    const name = this.entryName!;
    const cfg = await this.clientConfig();
    cfg.controllers[name]!.currentModel = this.name;
    cfg.current = name;
    await this.saveConfig(cfg);
    this.out(`Current model is now "${this.name}" on controller "${name}".`);
    return 0;
  }
}
