import { Command, Option, UsageError } from "clipanion";
import { stringify } from "../yaml-output";
import { formatSizeMiB } from "../../api/core";
import { ModelCommand } from "../base-command";

export default class ShowStorageCommand extends ModelCommand {
  static override paths = [["show-storage"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "show storage instances in full",
    details:
      "For each instance: its unit (absent when detached and kept) and machine, pool and pool type, size, kind, status (attached, detaching or detached), where its unit's hooks find it, its life (dying: to be destroyed) and when it was made.",
    examples: [
      ["Show data/0", "$0 show-storage data/0"],
      ["Two, as JSON", "$0 show-storage data/0 data/1 --format json"],
    ],
  });

  ids = Option.Rest({ required: 1, name: "storage" });
  format = Option.String("--format", "yaml", { description: "yaml or json" });

  async run(): Promise<number> {
    if (this.format !== "yaml" && this.format !== "json")
      throw new UsageError(`--format must be yaml or json, got "${this.format}"`);
    const client = await this.connect();
    const model = await this.model();
    const out: Record<string, unknown> = {};
    for (const id of this.ids) {
      const { id: _, ...s } = await client.showStorage(model, id);
      out[id] = { ...s, size: this.format === "yaml" ? formatSizeMiB(s.size) : s.size };
    }
    this.context.stdout.write(this.format === "json" ? JSON.stringify(out, null, 2) + "\n" : stringify(out));
    return 0;
  }
}
