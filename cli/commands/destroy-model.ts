import { Command, Option, UsageError } from "clipanion";
import type { ModelStatus, ModelSummary } from "../../api/core";
import { StewardError, contractNamed } from "../../api/core";
import { kubernetes } from "../../substrates";
import { ControllerCommand } from "../base-command";
import { withHeartbeat } from "../heartbeat";
import { DURATION_HELP, isDuration } from "../validators";

/** How long the wait may see no change before --force is suggested. */
const SUGGEST_FORCE_AFTER_MS = 20_000;
/** Units or machines named in one progress line; the rest are counted. */
const NAMED = 3;

export default class DestroyModelCommand extends ControllerCommand {
  static override paths = [["destroy-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "destroy a model and everything in it",
    details: `
      Removes every application (each unit runs its stop and remove hooks) and every machine, then the
      model. Waits until it is gone unless \`--no-wait\`, saying what it waits for; when nothing has
      changed for a while (agents that cannot be reached, a cluster that does not answer) it says so and
      suggests \`--force\`.

      \`--force\` deletes the model's records at once without running hooks and without reaching its
      machines or cluster: use it only when agents cannot be reached. What the controller cannot reach
      may be left behind; for a kubernetes model it prints what to delete by hand (its namespace, or its
      objects in a namespace Steward did not make).
    `,
    examples: [
      ["Destroy model demo", "$0 destroy-model demo --yes"],
      ["Without running hooks", "$0 destroy-model demo --yes --force"],
    ],
  });

  name = Option.String({ required: true, name: "model" });
  yes = Option.Boolean("-y,--yes", false, { description: "Confirm the destruction" });
  force = Option.Boolean("--force", false, { description: "Delete at once without running hooks" });
  noWait = Option.Boolean("--no-wait", false, { description: "Return without waiting for the model to be gone" });
  timeout = Option.String("--timeout", "5m", {
    description: "How long to wait: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    if (!this.yes)
      throw new UsageError(
        `this destroys model "${this.name}" and all its applications and machines: pass --yes to confirm`,
      );
    // A cluster or agents that do not answer keep it waiting: it says so while it waits.
    return withHeartbeat(this.progress.bind(this), undefined, (progress) => this.destroy(progress), {
      step: `destroying model "${this.name}"`,
    });
  }

  private async destroy(progress: (line: string) => void): Promise<number> {
    const client = await this.connect();
    const summary = (await client.listModels()).find((m) => m.name === this.name);
    const onPods = summary !== undefined && contractNamed(summary.substrate)?.provisions === "pods";
    // A pod model's namespace (its settings' `namespace`): objects a forced removal may leave there.
    const namespace =
      onPods && typeof summary.settings?.namespace === "string" ? summary.settings.namespace : undefined;
    await client.destroyModel(this.name, this.force);
    const { name, cfg } = await this.resolveController();
    if (cfg.controllers[name]!.currentModel === this.name) {
      delete cfg.controllers[name]!.currentModel;
      await this.saveConfig(cfg);
    }
    if (this.force && namespace) progress(leftBehind(summary!, namespace));
    if (this.noWait) {
      this.out(`Destroying model "${this.name}".`);
      return 0;
    }
    const deadline = Date.now() + this.timeout;
    let last = "";
    let lastChange = Date.now();
    let suggested = this.force;
    while (Date.now() < deadline) {
      const s = await client.status(this.name).catch((e: unknown) => {
        if (StewardError.isInstance(e) && e.code === "not-found") return undefined;
        throw e;
      });
      if (!s) {
        this.out(`Model "${this.name}" destroyed.`);
        return 0;
      }
      const line = waitingFor(s);
      if (line !== last) {
        progress(line);
        last = line;
        lastChange = Date.now();
      }
      if (!suggested && Date.now() - lastChange >= SUGGEST_FORCE_AFTER_MS) {
        suggested = true;
        progress(
          `Nothing has changed for ${SUGGEST_FORCE_AFTER_MS / 1000} s. If its agents${onPods ? " or its cluster" : ""} cannot be reached, \`steward destroy-model ${this.name} --yes --force\` removes the model now without running hooks${namespace ? `; objects in namespace ${namespace} of cluster ${summary?.credential ?? "?"} may be left behind` : ""}.`,
        );
      }
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new StewardError(
      "deadline-exceeded",
      `model "${this.name}" is still being destroyed after ${Math.round(this.timeout / 1000)} s (${last.trim()}); check steward status -m ${this.name}, or use --force if its agents${onPods ? " or its cluster" : ""} cannot be reached`,
    );
  }
}

/** What the model still has that its destruction waits for, naming a few units or machines with their status. */
function waitingFor(s: ModelStatus): string {
  const units = Object.values(s.applications).flatMap((a) => Object.values(a.units));
  const machines = Object.values(s.machines);
  const named = <T>(items: T[], show: (x: T) => string): string =>
    items.slice(0, NAMED).map(show).join(", ") + (items.length > NAMED ? ` and ${items.length - NAMED} more` : "");
  const parts: string[] = [];
  if (units.length > 0) {
    parts.push(
      `${units.length} unit${units.length > 1 ? "s" : ""} to run their teardown hooks: ${named(units, (u) => `${u.name} (agent ${u.agent.current}${u.workload.message ? `; ${u.workload.message}` : ""})`)}`,
    );
  } else if (Object.keys(s.applications).length > 0) {
    parts.push(`applications ${Object.keys(s.applications).join(", ")} to go`);
  }
  if (machines.length > 0)
    parts.push(
      `${machines.length} machine${machines.length > 1 ? "s" : ""} to stop: ${named(machines, (m) => `${m.id} (${m.status.current}${m.status.message ? `: ${m.status.message}` : ""})`)}`,
    );
  return `  waiting for ${parts.length > 0 ? parts.join("; then ") : "the model's last records to go"}`;
}

/** A kubernetes model removed by force: what stays in the cluster unless the controller gets to delete it. */
function leftBehind(m: ModelSummary, namespace: string): string {
  return (
    `The model's records are removed. Its objects in namespace ${namespace} of cluster ${m.credential ?? "?"} are deleted only if the controller reaches the cluster while it leads; ` +
    `otherwise they stay: delete them with \`kubectl delete namespace ${namespace}\` (a namespace Steward made for the model), ` +
    `or \`kubectl delete statefulsets,services,secrets -n ${namespace} -l ${kubernetes.selectorOf(m.uuid)}\` (one it did not make).`
  );
}
