import { Command, Option, UsageError } from "clipanion";
import type { AppliedChange } from "../../api/core";
import { waitForModelReady } from "../../api/core";
import { createInterface } from "node:readline";
import { ModelFileCommand } from "../base-command";
import { applyChanges } from "../plan";
import { DURATION_HELP, isDuration } from "../validators";

export default class ApplyCommand extends ModelFileCommand {
  static override paths = [["apply"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "make a model match a model file",
    details: `
      Reads the model file, compares it with what the controller has, prints the plan (\`+\` add,
      \`~\` change, \`-\` remove) and, once confirmed, carries it out: creates the model if needed,
      uploads changed operators, deploys, upgrades, configures and scales applications, and removes
      applications the file no longer lists. Then waits until every unit is active/idle, showing
      progress, unless \`--no-wait\`.

      Without a terminal to ask, \`--yes\` is required. See \`steward diff\` for the same comparison
      without changes.
    `,
    examples: [
      ["Apply the local example", "$0 apply examples/local/model.yaml --yes"],
      ["Apply to a named model", "$0 apply prod.yaml -m prod"],
    ],
  });

  yes = Option.Boolean("-y,--yes", false, { description: "Apply without asking" });
  noWait = Option.Boolean("--no-wait", false, { description: "Do not wait for units to become active" });
  timeout = Option.String("--timeout", "10m", {
    description: "How long to wait for units: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    const { client, model, def, changes } = await this.plan();
    let changed: Record<string, AppliedChange> = {};
    if (changes.length > 0) {
      if (!this.yes && !(await this.confirm())) {
        this.out("Nothing changed.");
        return 1;
      }
      changed = await applyChanges(client, model, def, changes, (l) => this.progress(l));
      const { name, cfg } = await this.resolveController();
      if (!cfg.controllers[name]!.currentModel) {
        cfg.controllers[name]!.currentModel = model;
        await this.saveConfig(cfg);
      }
    }
    if (!this.noWait && def.applications.length > 0) {
      this.progress("Waiting for units to be active/idle:");
      // Upgraded and reconfigured applications: until their units have run the hooks for it, not only active/idle.
      await waitForModelReady(client, model, {
        apps: def.applications.map((a) => a.name),
        changed,
        timeoutMs: this.timeout,
        progress: (l) => this.progress(l),
      });
      this.out(`Model "${model}" matches ${this.file}; all units are active.`);
    }
    return 0;
  }

  private async confirm(): Promise<boolean> {
    const stdin = this.context.stdin as NodeJS.ReadableStream & { isTTY?: boolean };
    if (!stdin.isTTY) throw new UsageError("refusing to change the model without confirmation: pass --yes");
    const rl = createInterface({ input: stdin, output: this.context.stderr });
    const answer = await new Promise<string>((r) => rl.question("Apply these changes? [y/N] ", r));
    rl.close();
    return /^y(es)?$/i.test(answer.trim());
  }
}
