import { Command, Option, UsageError } from "clipanion";
import type { ControllerClient, TaskInfo } from "../../api/core";
import { sanitizeForTerminal } from "../../api/core";
import { ModelCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";
import { stringify } from "../yaml-output";

const TARGET = /^[a-z][a-z0-9-]*(\/(\d+|leader))?$/;

export default class RunCommand extends ModelCommand {
  static override paths = [["run"]];
  static override usage = Command.Usage({
    category: "Actions",
    description: "run an operator's action on units and show what it reports",
    details: [
      "Queues the action on each unit named (`web/0`), on an application's leader (`web/leader`) or on every unit of an application (`web`), then waits for the tasks and prints their results, as `juju run` does. Parameters are `key=value` words after the action's name; they are checked against the action's declaration before anything is queued.",
      "",
      "Each unit runs its actions one at a time, after any hook that is due. `--background` returns once they are queued; `steward show-task ID` shows one later and `steward operations` lists them. Exits 1 when a task failed or the wait ran out.",
    ].join("\n"),
    examples: [
      ["Restart one unit's server", "$0 run web/0 restart"],
      ["With parameters", "$0 run web/0 web/1 restart delay=5"],
      ["On the leader, without waiting", "$0 run cluster/leader rotate-secret --background"],
    ],
  });

  words = Option.Rest({ name: "unit|app … action [key=value …]", required: 2 });
  background = Option.Boolean("--background", false, { description: "Return once the tasks are queued" });
  wait = Option.String("--wait", "10m", {
    description: "How long to wait for the tasks: " + DURATION_HELP,
    validator: isDuration(),
  });
  format = Option.String("--format", "yaml", { description: "yaml or json (the tasks' records)" });

  async run(): Promise<number> {
    if (this.format !== "yaml" && this.format !== "json")
      throw new UsageError(`--format must be yaml or json, got "${this.format}"`);
    const firstParam = this.words.findIndex((w) => w.includes("="));
    const names = firstParam === -1 ? this.words : this.words.slice(0, firstParam);
    const assignments = firstParam === -1 ? [] : this.words.slice(firstParam);
    if (names.length < 2)
      throw new UsageError(
        "give at least one unit or application and then the action's name, e.g. steward run web/0 restart",
      );
    const action = names[names.length - 1]!;
    const targets = names.slice(0, -1);
    for (const t of targets)
      if (!TARGET.test(t))
        throw new UsageError(`"${t}" is not a unit (web/0), a leader (web/leader) or an application (web)`);
    if (!/^[a-z][a-z0-9-]*$/.test(action)) throw new UsageError(`"${action}" is not an action name`);
    const params: Record<string, string> = {};
    for (const a of assignments) {
      const eq = a.indexOf("=");
      if (eq <= 0) throw new UsageError(`"${a}" is not key=value: parameters come after the action's name`);
      params[a.slice(0, eq)] = a.slice(eq + 1);
    }
    const client = await this.connect();
    const model = await this.model();
    const queued = await client.runAction(model, targets, action, params);
    const n = queued.tasks.length;
    this.progress(`Running operation ${queued.operation} with ${n} task${n === 1 ? "" : "s"}`);
    for (const t of queued.tasks) this.progress(`  - task ${t.id} on ${t.unit}`);
    if (this.background) {
      this.progress(`\nCheck a task with: steward show-task ${queued.tasks[0]!.id}${model ? ` -m ${model}` : ""}`);
      return 0;
    }
    const tasks = await this.waitFor(
      client,
      model,
      queued.tasks.map((t) => t.id),
    );
    this.print(tasks);
    const unfinished = tasks.filter((t) => t.status === "pending" || t.status === "running");
    for (const t of unfinished)
      this.progress(
        `ERROR task ${t.id} on ${t.unit} is still ${t.status} after ${this.wait / 1000} s: steward show-task ${t.id}`,
      );
    for (const t of tasks.filter((x) => x.status === "failed" || x.status === "aborted"))
      this.progress(`ERROR task ${t.id} on ${t.unit} ${t.status}: ${t.message}`);
    return tasks.every((t) => t.status === "completed") ? 0 : 1;
  }

  /** Polls the tasks until each has finished or the wait runs out (every 0.25 s, slowing to 2 s). */
  private async waitFor(client: ControllerClient, model: string, ids: number[]): Promise<TaskInfo[]> {
    const deadline = Date.now() + this.wait;
    let pause = 250;
    for (;;) {
      const tasks = await Promise.all(ids.map((id) => client.task(model, id)));
      if (tasks.every((t) => t.status !== "pending" && t.status !== "running") || Date.now() >= deadline) return tasks;
      await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(0, deadline - Date.now()))));
      pause = Math.min(pause * 2, 2000);
    }
  }

  /** One task: its results, as `juju run` prints them; several: each under its unit. */
  private print(tasks: TaskInfo[]): void {
    if (this.format === "json") {
      this.context.stdout.write(JSON.stringify(tasks, null, 2) + "\n");
      return;
    }
    const shown = (t: TaskInfo): Record<string, unknown> => ({
      ...(t.results && Object.keys(t.results).length > 0 ? { results: t.results } : {}),
      ...(t.log.length > 0 ? { log: t.log.map((l) => `${l.ts} ${l.message}`) } : {}),
      ...(t.status !== "completed"
        ? { status: t.status, message: t.message, ...(t.output ? { output: t.output } : {}) }
        : {}),
    });
    const doc =
      tasks.length === 1 ? shown(tasks[0]!) : Object.fromEntries(tasks.map((t) => [t.unit, { id: t.id, ...shown(t) }]));
    if (Object.keys(doc).length === 0) return;
    this.context.stdout.write(sanitizeForTerminal(stringify(doc)));
  }
}
