import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { checkUnitName } from "../validators";

export default class RemoveUnitCommand extends ModelCommand {
  static override paths = [["remove-unit"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "remove units from an application",
    details: "Each unit runs its stop and remove hooks, then goes; a machine created for it goes too. `--force` removes at once without hooks.",
    examples: [["Remove web/2", "$0 remove-unit web/2"], ["Remove two units", "$0 remove-unit web/1 web/2"]],
  });

  units = Option.Rest({ required: 1, name: "unit" });
  force = Option.Boolean("--force", false, { description: "Remove at once without running hooks" });

  async run(): Promise<number> {
    for (const u of this.units) checkUnitName(u);
    const client = await this.connect();
    const model = await this.model();
    for (const u of this.units) {
      await client.removeUnit(model, u, this.force);
      this.out(`Removing ${u}.`);
    }
    return 0;
  }
}
