import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";

export default class AddUnitCommand extends ModelCommand {
  static override paths = [["add-unit"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "add units to an application",
    examples: [["Add one unit of web", "$0 add-unit web"], ["Add three, the first on machine 4", "$0 add-unit web -n 3 --to 4"]],
  });

  app = Option.String({ required: true, name: "application" });
  count = Option.String("-n,--num-units", "1", { description: "How many units" });
  to = Option.String("--to", { description: "Comma-separated machine ids for the first units" });

  async run(): Promise<number> {
    const n = Number(this.count);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`-n must be a whole number of at least 1, got "${this.count}"`);
    const client = await this.connect();
    const res = await client.addUnits(await this.model(), this.app, n, this.to ? this.to.split(",").map((s) => s.trim()) : undefined);
    this.out(`Added ${res.units.join(", ")}.`);
    return 0;
  }
}
