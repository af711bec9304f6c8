import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveStoragePoolCommand extends ModelCommand {
  static override paths = [["remove-storage-pool"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "remove a storage pool made with create-storage-pool",
    details: `
      Refused while a storage instance, or the new units of an application deployed with it, would use it (\`storage-pool-in-use\`); built-in pools cannot be removed.
    `,
    examples: [["Remove pool fast", "$0 remove-storage-pool fast"]],
  });

  name = Option.String({ required: true, name: "name" });

  async run(): Promise<number> {
    const client = await this.connect();
    await client.removeStoragePool(await this.model(), this.name);
    this.out(`Removed storage pool ${this.name}.`);
    return 0;
  }
}
