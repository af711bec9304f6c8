import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveApplicationCommand extends ModelCommand {
  static override paths = [["remove-application"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "remove an application and all its units",
    details:
      "Every unit runs its stop and remove hooks; machines created for the units go with them. `--force` removes at once without hooks.",
    examples: [["Remove web", "$0 remove-application web"]],
  });

  app = Option.String({ required: true, name: "application" });
  force = Option.Boolean("--force", false, { description: "Remove at once without running hooks" });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    await client.removeApplication(model, this.app, this.force);
    this.out(`Removing application "${this.app}".`);
    return 0;
  }
}
