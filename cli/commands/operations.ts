import { Command, Option, UsageError } from "clipanion";
import { table } from "../../api/core";
import { ModelCommand } from "../base-command";
import { isWholeNumber } from "../validators";

export default class OperationsCommand extends ModelCommand {
  static override paths = [["operations"]];
  static override usage = Command.Usage({
    category: "Actions",
    description: "list the model's action runs, newest first",
    details:
      "Each operation is one `steward run`: its action, status (running while any task runs, then failed if any task failed) and the units it ran on with their task ids. The controller keeps the newest 1,000 per model.",
    examples: [
      ["The last 20", "$0 operations"],
      ["The last 100, as JSON", "$0 operations --limit 100 --format json"],
    ],
  });

  limit = Option.String("--limit", "20", { description: "How many (1–1000)", validator: isWholeNumber(1, 1000) });
  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    if (this.format !== "tabular" && this.format !== "json")
      throw new UsageError(`--format must be tabular or json, got "${this.format}"`);
    const client = await this.connect();
    const { operations } = await client.operations(await this.model(), this.limit);
    if (this.format === "json") {
      this.out(JSON.stringify(operations, null, 2));
      return 0;
    }
    if (operations.length === 0) {
      this.out("No operations: run an action with steward run.");
      return 0;
    }
    this.context.stdout.write(
      table(
        ["Id", "Status", "Action", "Enqueued", "By", "Tasks"],
        operations.map((o) => [
          String(o.id),
          o.status,
          o.action,
          o.enqueued.replace(/\.\d+Z$/, "Z"),
          o.by,
          o.tasks.map((t) => `${t.id} ${t.unit} (${t.status})`).join(", "),
        ]),
      ),
    );
    return 0;
  }
}
