import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveApplicationCommand extends ModelCommand {
  static override paths = [["remove-application"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "remove an application and all its units",
    details:
      "Every unit runs its stop and remove hooks; machines created for the units go with them. `--force` removes at once without hooks. The units' storage is kept, detached (`steward storage`), for a new unit to take over (`add-unit --attach-storage`); `--destroy-storage` destroys it and its data instead.",
    examples: [
      ["Remove web", "$0 remove-application web"],
      ["Remove a database and its data", "$0 remove-application postgresql --destroy-storage"],
    ],
  });

  app = Option.String({ required: true, name: "application" });
  force = Option.Boolean("--force", false, { description: "Remove at once without running hooks" });
  destroyStorage = Option.Boolean("--destroy-storage", false, {
    description: "Destroy the units' storage and its data instead of keeping it detached",
  });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    await client.removeApplication(model, this.app, this.force, this.destroyStorage);
    this.out(`Removing application "${this.app}"${this.destroyStorage ? " and destroying its storage" : ""}.`);
    return 0;
  }
}
