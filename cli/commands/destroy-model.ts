import { Command, Option, UsageError } from "clipanion";
import { StewardError } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";

export default class DestroyModelCommand extends ControllerCommand {
  static override paths = [["destroy-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "destroy a model and everything in it",
    details: `
      Removes every application (each unit runs its stop and remove hooks) and every machine, then the
      model. Waits until it is gone unless \`--no-wait\`. \`--force\` deletes everything at once
      without running hooks: use it only when agents cannot be reached.
    `,
    examples: [["Destroy model demo", "$0 destroy-model demo --yes"], ["Without running hooks", "$0 destroy-model demo --yes --force"]],
  });

  name = Option.String({ required: true, name: "model" });
  yes = Option.Boolean("-y,--yes", false, { description: "Confirm the destruction" });
  force = Option.Boolean("--force", false, { description: "Delete at once without running hooks" });
  noWait = Option.Boolean("--no-wait", false, { description: "Return without waiting for the model to be gone" });
  timeout = Option.String("--timeout", "5m", { description: "How long to wait: " + DURATION_HELP, validator: isDuration() });

  async run(): Promise<number> {
    if (!this.yes) throw new UsageError(`this destroys model "${this.name}" and all its applications and machines: pass --yes to confirm`);
    const client = await this.connect();
    await client.destroyModel(this.name, this.force);
    const { name, cfg } = await this.resolveController();
    if (cfg.controllers[name]!.currentModel === this.name) { delete cfg.controllers[name]!.currentModel; await this.saveConfig(cfg); }
    if (this.noWait) { this.out(`Destroying model "${this.name}".`); return 0; }
    const deadline = Date.now() + this.timeout;
    let last = "";
    while (Date.now() < deadline) {
      const s = await client.status(this.name).catch((e: unknown) => { if (StewardError.isInstance(e) && e.code === "not-found") return undefined; throw e; });
      if (!s) { this.out(`Model "${this.name}" destroyed.`); return 0; }
      const line = `  ${Object.keys(s.applications).length} applications, ${Object.values(s.applications).reduce((n, a) => n + a.scale, 0)} units, ${Object.keys(s.machines).length} machines left`;
      if (line !== last) { this.progress(line); last = line; }
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new StewardError("unavailable", `model "${this.name}" is still being destroyed after ${Math.round(this.timeout / 1000)} s; check steward status -m ${this.name}, or use --force if its agents are gone`);
  }
}
