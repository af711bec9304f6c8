import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveStorageCommand extends ModelCommand {
  static override paths = [["remove-storage"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "destroy storage instances and their data",
    details: `
      A detached (kept) instance is destroyed: its substrate's volume broker deletes it, then \`steward storage\` no longer lists it. An attached one is refused (\`storage-attached\`) unless \`--force\`, which detaches it first (its unit's \`<name>-storage-detaching\` hook runs) and then destroys it.
    `,
    examples: [
      ["Destroy kept storage", "$0 remove-storage data/0"],
      ["Detach and destroy attached storage", "$0 remove-storage data/1 --force"],
    ],
  });

  ids = Option.Rest({ required: 1, name: "storage" });
  force = Option.Boolean("--force", false, { description: "Destroy attached storage too, detaching it first" });

  async run(): Promise<number> {
    const client = await this.connect();
    const { ids } = await client.removeStorage(await this.model(), this.ids, this.force);
    this.out(`Removing ${ids.join(", ")}: destroyed once detached.`);
    return 0;
  }
}
