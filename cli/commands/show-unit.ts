import { Command, Option, UsageError } from "clipanion";
import { stringify } from "../yaml-output";
import type { UnitDetails } from "../../api/core";
import { sanitizeForTerminal } from "../../api/core";
import { ModelCommand } from "../base-command";
import { checkUnitName } from "../validators";

export default class ShowUnitCommand extends ModelCommand {
  static override paths = [["show-unit"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "show a unit with its integrations and their data",
    details:
      "Prints the unit's status (in error: the failed hook and the last lines of its output), whether it leads its application, its open ports, and for each integration the unit's own databag, its application's, and every remote unit's.",
    examples: [
      ["Show web/0", "$0 show-unit web/0"],
      ["As JSON", "$0 show-unit web/0 --format json"],
    ],
  });

  unit = Option.String({ required: true, name: "unit" });
  format = Option.String("--format", "yaml", { description: "yaml or json" });

  async run(): Promise<number> {
    checkUnitName(this.unit);
    if (this.format !== "yaml" && this.format !== "json")
      throw new UsageError(`--format must be yaml or json, got "${this.format}"`);
    const client = await this.connect();
    const details = withFailureUnderStatus(await client.showUnit(await this.model(), this.unit));
    this.context.stdout.write(
      this.format === "json" ? JSON.stringify(details, null, 2) + "\n" : stringify({ [this.unit]: details }),
    );
    return 0;
  }
}

/**
 * The failed hook's output right under the agent status it explains, cleaned for the terminal (it
 * comes from the machine).
 */
function withFailureUnderStatus(details: UnitDetails): Record<string, unknown> {
  const { failure, ...rest } = details;
  if (!failure) return rest;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) {
    out[k] = v;
    if (k === "agent")
      out.failure = {
        hook: sanitizeForTerminal(failure.hook, { keepNewlines: false }),
        since: failure.since,
        output: sanitizeForTerminal(failure.output),
      };
  }
  return out;
}
