import { Command, Option, UsageError } from "clipanion";
import type { ControllerClient, ModelSettings } from "../../api/core";
import { StewardError } from "../../api/core";
import { ModelCommand, parseAssignments } from "../base-command";
import { parseDuration } from "../wait";

export default class ModelConfigCommand extends ModelCommand {
  static override paths = [["model-config"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show or change model settings",
    details: `
      Settings: \`update-status-interval\` (how often units run update-status, e.g. 30s, 5m; default
      5m) and \`automatically-retry-hooks\` (true: failed hooks are retried after 5 s doubling to 5
      min; false: they wait for \`steward resolve\`).
    `,
    examples: [
      ["Show settings", "$0 model-config"],
      ["Stop automatic retries", "$0 model-config automatically-retry-hooks=false"],
    ],
  });

  assignments = Option.Rest({ name: "key=value" });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    const config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean } = {};
    for (const [k, v] of Object.entries(parseAssignments(this.assignments, "setting"))) {
      if (k === "update-status-interval") config.updateStatusInterval = Math.round(parseDuration(v, k) / 1000);
      else if (k === "automatically-retry-hooks") {
        if (v !== "true" && v !== "false") throw new UsageError(`${k} must be true or false, got "${v}"`);
        config.automaticallyRetryHooks = v === "true";
      } else
        throw new UsageError(
          `"${k}" is not a model setting (known: update-status-interval, automatically-retry-hooks)`,
        );
    }
    // Showing is a read (any user with access to the model); changing needs admin on it.
    const c =
      Object.keys(config).length > 0
        ? ((await client.updateModel(model, config)).config as Partial<ModelSettings>)
        : await this.shownConfig(client, model);
    if (!c)
      throw new StewardError("not-found", `model "${model}" not found (steward models lists the models you can see)`);
    this.out(`update-status-interval     ${c.updateStatusInterval}s`);
    this.out(`automatically-retry-hooks  ${c.automaticallyRetryHooks ?? true}`);
    return 0;
  }

  /** The model's settings; a model that moved is followed to its controller, as every command that names it does. */
  private async shownConfig(client: ControllerClient, model: string): Promise<Partial<ModelSettings> | undefined> {
    const here = (await client.listModels()).find((m) => m.name === model);
    if (here) return here.config;
    // Not listed: asking for the model itself answers "moved" (followed, when this client knows the target) or "not found".
    await client.status(model);
    return (await client.listModels()).find((m) => m.name === model)?.config;
  }
}
