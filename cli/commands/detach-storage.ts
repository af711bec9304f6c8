import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class DetachStorageCommand extends ModelCommand {
  static override paths = [["detach-storage"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "detach storage from live units, keeping it",
    details: `
      Each instance's unit runs its \`<name>-storage-detaching\` hook; then the instance is detached and kept, with its data (\`steward storage\` shows it detached), for \`attach-storage\` or \`add-unit --attach-storage\`. Refused when it would leave a unit fewer instances of a store than its operator needs (\`multiple.range\`), naming the minimum, unless \`--force\`.
    `,
    examples: [
      ["Detach data/1 from its unit", "$0 detach-storage data/1"],
      ["Even below the operator's minimum", "$0 detach-storage data/0 --force"],
    ],
  });

  ids = Option.Rest({ required: 1, name: "storage" });
  force = Option.Boolean("--force", false, { description: "Detach even below the operator's minimum count" });

  async run(): Promise<number> {
    const client = await this.connect();
    const { ids } = await client.detachStorage(await this.model(), this.ids, this.force);
    this.out(`Detaching ${ids.join(", ")}: kept once its unit's storage-detaching hook has run.`);
    return 0;
  }
}
