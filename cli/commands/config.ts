import { Command, Option, UsageError } from "clipanion";
import { coerceConfigText } from "../../api/core";
import type { ApplicationInfo, ConfigOptionType } from "../../api/core";
import { ModelCommand, parseAssignments } from "../base-command";
import { byName, table } from "../../api/core";

export default class ConfigCommand extends ModelCommand {
  static override paths = [["config"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "show or change an application's config",
    details:
      "With no assignments, prints every option with its value, type and whether it is the default; with one key, prints just that value (for scripts). `key=value` sets; `--reset key` goes back to the default. Values are converted to the option's type; a wrong type is refused and nothing changes.",
    examples: [
      ["Show config", "$0 config web"],
      ["One value", "$0 config web greeting"],
      ["Set two values", "$0 config web greeting=Hi port=8081"],
      ["Back to the default", "$0 config web --reset greeting"],
    ],
  });

  app = Option.String({ required: true, name: "application" });
  assignments = Option.Rest({ name: "key|key=value" });
  reset = Option.Array("--reset", [], { description: "Reset a key to its default (repeatable)" });
  format = Option.String("--format", "tabular", { description: "tabular or json (when showing)" });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    const info = await client.getApplication(model, this.app);
    if (this.assignments.length === 1 && !this.assignments[0]!.includes("=") && this.reset.length === 0)
      return this.showOne(info, this.assignments[0]!);
    if (this.assignments.length === 0 && this.reset.length === 0) {
      if (this.format === "json") {
        this.out(JSON.stringify(info.config, null, 2));
        return 0;
      }
      this.context.stdout.write(
        table(
          ["Key", "Value", "Type", "Source", "Description"],
          Object.entries(info.configSchema)
            .sort(([a], [b]) => byName(a, b))
            .map(([k, opt]) => [
              k,
              k in info.config ? String(info.config[k]) : "",
              opt.type,
              info.config[k] === opt.default ? "default" : "user",
              opt.description,
            ]),
        ),
      );
      return 0;
    }
    const patch: Record<string, string | number | boolean | null> = {};
    for (const [k, v] of Object.entries(parseAssignments(this.assignments, "config")))
      patch[k] = coerceConfigText(info.configSchema[k]?.type as ConfigOptionType | undefined, v);
    for (const k of this.reset) patch[k] = null;
    await client.updateApplication(model, this.app, { config: patch });
    this.out(`Updated config of "${this.app}".`);
    return 0;
  }

  /** `config APP KEY`: the value alone (empty when it has none), or as JSON with --format json. */
  private showOne(info: ApplicationInfo, key: string): number {
    if (!(key in info.configSchema)) {
      const keys = Object.keys(info.configSchema).sort(byName);
      throw new UsageError(
        `${this.app} has no config option "${key}" (options: ${keys.join(", ") || "none"}); key=value sets one`,
      );
    }
    const value = info.config[key];
    if (this.format === "json") this.out(JSON.stringify(value ?? null));
    else this.out(value === undefined ? "" : String(value));
    return 0;
  }
}
