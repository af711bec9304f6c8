import { Command, Option, UsageError } from "clipanion";
import { table } from "../../api/core";
import { ModelCommand } from "../base-command";
import { checkUnitName, isWholeNumber } from "../validators";

export default class ShowStatusLogCommand extends ModelCommand {
  static override paths = [["show-status-log"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "show how a unit's workload and agent status changed",
    details:
      "Each change of the unit's workload status (what its operator set) and agent status (what its agent was doing), oldest first, as `juju show-status-log` shows them. The controller keeps the last 50 changes per unit (each message cut at 256 characters).",
    examples: [
      ["The last 20 changes of web/0", "$0 show-status-log web/0"],
      ["All kept, as JSON", "$0 show-status-log web/0 -n 100 --format json"],
    ],
  });

  unit = Option.String({ required: true, name: "unit" });
  count = Option.String("-n,--count", "20", {
    description: "How many of the newest changes (1–50)",
    validator: isWholeNumber(1, 50),
  });
  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    checkUnitName(this.unit);
    if (this.format !== "tabular" && this.format !== "json")
      throw new UsageError(`--format must be tabular or json, got "${this.format}"`);
    const client = await this.connect();
    const entries = (await client.statusLog(await this.model(), this.unit)).entries.slice(-this.count);
    if (this.format === "json") {
      this.out(JSON.stringify(entries, null, 2));
      return 0;
    }
    if (entries.length === 0) {
      this.out(`No status changes recorded for ${this.unit} yet.`);
      return 0;
    }
    this.context.stdout.write(
      table(
        ["Time", "Type", "Status", "Message"],
        entries.map((e) => [e.since.replace(/\.\d+Z$/, "Z"), e.type, e.status, e.message]),
      ),
    );
    return 0;
  }
}
