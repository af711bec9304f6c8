import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";
import { table } from "../../api/core";

export default class StoragePoolsCommand extends ModelCommand {
  static override paths = [["storage-pools"]];
  static override usage = Command.Usage({
    category: "Applications",
    description:
      "list the model's storage pools: its substrate's built-in ones and those made with create-storage-pool",
    examples: [
      ["List the pools", "$0 storage-pools"],
      ["As JSON", "$0 storage-pools --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    if (this.format !== "tabular" && this.format !== "json")
      throw new UsageError(`--format must be tabular or json, got "${this.format}"`);
    const client = await this.connect();
    const { pools } = await client.listStoragePools(await this.model());
    if (this.format === "json") {
      this.out(JSON.stringify(pools, null, 2));
      return 0;
    }
    if (pools.length === 0) {
      this.out("No storage pools: the model's substrate has no storage yet.");
      return 0;
    }
    this.context.stdout.write(
      table(
        ["Name", "Type", "Kinds", "Attributes"],
        pools.map((p) => [
          p.name,
          p.builtIn ? `${p.type} (built-in)` : p.type,
          p.kinds.join(","),
          Object.entries(p.attributes)
            .map(([k, v]) => `${k}=${v}`)
            .join(" "),
        ]),
      ),
    );
    return 0;
  }
}
