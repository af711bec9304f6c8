import { Command } from "clipanion";
import { ModelFileCommand } from "../base-command";

export default class DiffCommand extends ModelFileCommand {
  static override paths = [["diff"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show how a model differs from a model file, changing nothing",
    details:
      "Prints the plan that `steward apply` would carry out. Exit code 0 means in sync, 2 means there is drift (as `terraform plan -detailed-exitcode`), 1 means an error.",
    examples: [["Check for drift", "$0 diff examples/local/model.yaml"]],
  });

  async run(): Promise<number> {
    const { changes } = await this.plan();
    return changes.length === 0 ? 0 : 2;
  }
}
