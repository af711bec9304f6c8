import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { checkUnitName } from "../validators";

export default class AttachStorageCommand extends ModelCommand {
  static override paths = [["attach-storage"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "attach kept storage to a live unit of its application",
    details: `
      The instances must be detached (\`steward storage\`) and belong to the unit's application; the unit may not have more of a store than its operator allows (\`multiple.range\`). Once attached, the unit's \`<name>-storage-attached\` hook runs for each.
    `,
    examples: [["Give data/0 to notebook/1", "$0 attach-storage notebook/1 data/0"]],
  });

  unit = Option.String({ required: true, name: "unit" });
  ids = Option.Rest({ required: 1, name: "storage" });

  async run(): Promise<number> {
    checkUnitName(this.unit);
    const client = await this.connect();
    const { ids } = await client.attachStorage(await this.model(), this.unit, this.ids);
    this.out(`Attaching ${ids.join(", ")} to ${this.unit}.`);
    return 0;
  }
}
