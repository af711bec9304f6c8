import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { printMigration } from "../migration-progress";
import { routes } from "../../api/core";

export default class ShowMigrationCommand extends ControllerCommand {
  static override paths = [["show-migration"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show where a model's migration stands",
    details: `
      The model's last migration: its phase, what the controller is doing or waiting for, which
      agents have not answered the phase yet, every phase with when it began, and why it was aborted
      if it was. Asked of the source controller; after the move it still answers for the model. Asked
      of the controller the model moved to, it names the migration that brought it, from where and when.
    `,
    examples: [
      ["Show the migration of model demo", "$0 show-migration demo"],
      ["As JSON", "$0 show-migration demo --format json"],
    ],
  });

  model = Option.String({ required: true, name: "model" });
  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const info = await (await this.connect()).call(routes.migration, { model: this.model });
    if (this.format === "json") {
      this.out(JSON.stringify(info, null, 2));
      return 0;
    }
    if ("arrival" in info) {
      const a = info.arrival;
      this.out(
        `Model ${a.model.name} arrived by migration ${a.id} from controller ${a.source.name || "?"} (${a.source.controller}) at ${a.arrivedAt}${a.stagedAt ? `, staged at ${a.stagedAt}` : ""}.`,
      );
      this.out(
        `  The source controller keeps the migration's phases: steward show-migration ${a.model.name} -c SOURCE`,
      );
      return 0;
    }
    printMigration(info, (line) => this.out(line));
    return 0;
  }
}
