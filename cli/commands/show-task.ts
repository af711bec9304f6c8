import { Command, Option, UsageError } from "clipanion";
import { sanitizeForTerminal } from "../../api/core";
import { ModelCommand } from "../base-command";
import { stringify } from "../yaml-output";

export default class ShowTaskCommand extends ModelCommand {
  static override paths = [["show-task"]];
  static override usage = Command.Usage({
    category: "Actions",
    description: "show one action run: its status, parameters, results, log and output",
    details:
      "A task is one action on one unit (`steward run` prints their ids). Results are what the action set with `action-set`; the log, its `action-log` lines; the output, the end of what it printed.",
    examples: [
      ["Show task 2", "$0 show-task 2"],
      ["As JSON", "$0 show-task 2 --format json"],
    ],
  });

  id = Option.String({ required: true, name: "task-id" });
  format = Option.String("--format", "yaml", { description: "yaml or json" });

  async run(): Promise<number> {
    if (!/^\d{1,10}$/.test(this.id))
      throw new UsageError(`"${this.id}" is not a task id (a number that steward run printed)`);
    if (this.format !== "yaml" && this.format !== "json")
      throw new UsageError(`--format must be yaml or json, got "${this.format}"`);
    const client = await this.connect();
    const task = await client.task(await this.model(), Number(this.id));
    this.context.stdout.write(
      this.format === "json" ? JSON.stringify(task, null, 2) + "\n" : sanitizeForTerminal(stringify(task)),
    );
    return 0;
  }
}
