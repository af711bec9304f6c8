import { Command, Option } from "clipanion";
import { resolve } from "node:path";
import { ModelCommand } from "../base-command";
import { loadModelFile } from "../model-file";
import { actualStatus, describePlan, planChanges } from "../plan";

export default class DiffCommand extends ModelCommand {
  static override paths = [["diff"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show how a model differs from a model file, changing nothing",
    details: "Prints the plan that `steward apply` would carry out. Exit code 0 means in sync, 2 means there is drift (as `terraform plan -detailed-exitcode`), 1 means an error.",
    examples: [["Check for drift", "$0 diff examples/local/model.yaml"]],
  });

  file = Option.String({ required: true, name: "model-file" });

  async run(): Promise<number> {
    const def = await loadModelFile(resolve(this.context.cwd, this.file));
    const model = this.modelName ?? def.model ?? (await this.model());
    const client = await this.connect();
    const changes = planChanges(def, model, await actualStatus(client, model));
    this.context.stdout.write(describePlan(model, changes));
    return changes.length === 0 ? 0 : 2;
  }
}
