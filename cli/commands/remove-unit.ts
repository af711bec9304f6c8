import { Command, Option, UsageError } from "clipanion";
import * as t from "typanion";
import { ModelCommand } from "../base-command";
import { checkUnitName } from "../validators";

const numberOf = (unit: string): number => Number(unit.slice(unit.lastIndexOf("/") + 1));

export default class RemoveUnitCommand extends ModelCommand {
  static override paths = [["remove-unit"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "remove units from an application",
    details: `
      Each unit runs its stop and remove hooks, then goes; a machine created for it goes too. \`--force\` removes at once without hooks.

      Its storage is kept, detached (\`steward storage\`), for a new unit to take over (\`add-unit --attach-storage\`); \`--destroy-storage\` destroys it and its data instead.

      Units named together go highest number first. \`--num-units N\` with an application's name removes its N highest-numbered units: on a kubernetes model that is the only order there is, since unit N is pod N of the application's StatefulSet, which scales down from its highest ordinal.
    `,
    examples: [
      ["Remove web/2", "$0 remove-unit web/2"],
      ["Remove two units", "$0 remove-unit web/1 web/2"],
      ["Scale web down by two (the highest-numbered units)", "$0 remove-unit web --num-units 2"],
    ],
  });

  units = Option.Rest({ required: 1, name: "unit" });
  numUnits = Option.String("--num-units,-n", {
    description: "With an application's name: how many of its highest-numbered units to remove",
    validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(1)),
  });
  force = Option.Boolean("--force", false, { description: "Remove at once without running hooks" });
  destroyStorage = Option.Boolean("--destroy-storage", false, {
    description: "Destroy the units' storage and its data instead of keeping it",
  });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    let units: string[];
    if (this.numUnits !== undefined) {
      if (this.units.length !== 1 || this.units[0]!.includes("/"))
        throw new UsageError("--num-units takes one application's name: remove-unit web --num-units 2");
      const app = this.units[0]!;
      const status = await client.status(model);
      if (!status.applications[app]) throw new UsageError(`application "${app}" is not in model ${model}`);
      const alive = Object.values(status.applications[app].units)
        .filter((u) => u.life === "alive")
        .map((u) => u.name);
      if (alive.length < this.numUnits)
        throw new UsageError(
          `${app} has ${alive.length} unit${alive.length === 1 ? "" : "s"} not already being removed; cannot remove ${this.numUnits}`,
        );
      units = alive.sort((a, b) => numberOf(b) - numberOf(a)).slice(0, this.numUnits);
    } else {
      for (const u of this.units) checkUnitName(u);
      units = [...this.units].sort((a, b) => numberOf(b) - numberOf(a));
    }
    for (const u of units) {
      await client.removeUnit(model, u, this.force, this.destroyStorage);
      this.out(`Removing ${u}.`);
    }
    return 0;
  }
}
