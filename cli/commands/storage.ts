import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { formatSizeMiB, table } from "../../api/core";

export default class StorageCommand extends ModelCommand {
  static override paths = [["storage"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "list the model's storage instances: attached to units, or detached and kept",
    details: `
      Storage that an operator declares (operator.yaml \`storage:\`) outlives its units: when a unit goes, its storage is kept, detached, unless \`remove-unit --destroy-storage\`. Give kept storage to a new unit with \`add-unit APP --attach-storage data/0\`.
    `,
    examples: [
      ["List storage", "$0 storage"],
      ["As JSON", "$0 storage --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const client = await this.connect();
    const { storage } = await client.listStorage(await this.model());
    if (this.format === "json") {
      this.out(JSON.stringify(storage, null, 2));
      return 0;
    }
    if (storage.length === 0) {
      this.out("No storage.");
      return 0;
    }
    // What a substrate refused (a datastore or a storage class that does not exist), while it keeps trying.
    const messages = storage.some((s) => s.message);
    this.context.stdout.write(
      table(
        ["Storage", "Unit", "Pool", "Size", "Status", "Location", ...(messages ? ["Message"] : [])],
        storage.map((s) => [
          s.id,
          s.unit ?? `(${s.app})`,
          s.pool,
          formatSizeMiB(s.size),
          s.status === "attached" && !s.location ? "attaching" : s.status,
          s.location,
          ...(messages ? [s.message ?? ""] : []),
        ]),
      ),
    );
    return 0;
  }
}
