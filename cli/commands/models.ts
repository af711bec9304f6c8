import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { table } from "../../api/core";

export default class ModelsCommand extends ControllerCommand {
  static override paths = [["models"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "list the models you can access",
    examples: [
      ["List models", "$0 models"],
      ["As JSON", "$0 models --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const client = await this.connect();
    const models = await client.listModels();
    if (this.format === "json") {
      this.out(JSON.stringify(models, null, 2));
      return 0;
    }
    const current = this.entry?.currentModel;
    if (models.length === 0) {
      this.out("No models. Create one with: steward add-model <name>");
      return 0;
    }
    this.context.stdout.write(
      table(
        ["Model", "Status", "Substrate", "Apps", "Units", "Machines", "Access", "Owner"],
        models.map((m) => [
          `${m.name}${m.name === current ? "*" : ""}`,
          m.life === "alive" ? "available" : "destroying",
          m.substrate,
          String(m.applications),
          String(m.units),
          String(m.machines),
          m.access,
          m.owner,
        ]),
      ),
    );
    return 0;
  }
}
