import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { isWholeNumber } from "../validators";

export default class AddUnitCommand extends ModelCommand {
  static override paths = [["add-unit"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "add units to an application",
    examples: [
      ["Add one unit of web", "$0 add-unit web"],
      ["Add three, the first on machine 4", "$0 add-unit web -n 3 --to 4"],
      ["Add one that takes over kept storage", "$0 add-unit db --attach-storage data/0"],
    ],
  });

  app = Option.String({ required: true, name: "application" });
  count = Option.String("-n,--num-units", "1", { description: "How many units", validator: isWholeNumber(1) });
  to = Option.String("--to", { description: "Comma-separated machine ids for the first units" });
  attachStorage = Option.String("--attach-storage", {
    description: "Comma-separated kept (detached) storage instances of the application for the new unit",
  });

  async run(): Promise<number> {
    const n = this.count;
    const client = await this.connect();
    const res = await client.addUnits(
      await this.model(),
      this.app,
      n,
      this.to ? this.to.split(",").map((s) => s.trim()) : undefined,
      this.attachStorage
        ?.split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );
    this.out(`Added ${res.units.join(", ")}.`);
    return 0;
  }
}
