import { Command, Option, UsageError } from "clipanion";
import { STEWARD_VERSION, StewardError, parseVersion } from "../../api/core";
import { ModelCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";
import { planModelUpgrade } from "../upgrade/model-plan";
import type { ModelUpgradePlan } from "../upgrade/model-plan";
import { runModelUpgrade } from "../upgrade/run-model-upgrade";

export default class UpgradeModelCommand extends ModelCommand {
  static override paths = [["upgrade-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "move the model's machine agents to an agent release the controller holds",
    details: `
      Moves the agents of the model's machines to release \`--to\` (default: the controller's own),
      which the controller must hold (\`steward upgrade-model --dry-run\` lists what it holds). Each
      agent downloads the release from the controller, checks its content hash, puts it beside the
      one it runs, switches once no hook is running, restarts and reports its version. A new agent
      that does not come up and report within \`--trial\` goes back to its previous release by itself.

      Rolling: \`--batch\` machines of each application at a time (default 1), the machines of the
      applications' leaders last. The first machine that goes back, or does not report by
      \`--timeout\`, stops the upgrade with what happened; run the same command again to resume.
      Units keep their hook state: they do not run install or start again. Agents of Kubernetes pods
      are not moved by this command yet. \`--dry-run\` prints the plan and changes nothing.
    `,
    examples: [
      ["Show what would be done", "$0 upgrade-model --dry-run"],
      ["Move every machine agent of model prod to the controller's release", "$0 upgrade-model -m prod"],
      ["Two machines of each application at a time", "$0 upgrade-model --batch 2"],
    ],
  });

  to = Option.String("--to", { description: "The agent release to move to (default: the controller's own version)" });
  batch = Option.String("--batch", "1", { description: "Machines of each application moved at a time" });
  dryRun = Option.Boolean("--dry-run", false, { description: "Print the plan and change nothing" });
  trial = Option.String("--trial", "2m", {
    description: "How long each new agent has to come up and report before it goes back: " + DURATION_HELP,
    validator: isDuration(),
  });
  timeout = Option.String("--timeout", "10m", {
    description: "How long each wave may take before the upgrade stops: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    const batch = Number(this.batch);
    if (!/^\d+$/.test(this.batch) || batch < 1)
      throw new UsageError(`--batch ${this.batch}: give a whole number of machines, 1 or more (default 1)`);
    if (this.to !== undefined && !parseVersion(this.to))
      throw new UsageError(`--to ${this.to}: give a version such as ${STEWARD_VERSION} (MAJOR.MINOR.PATCH)`);
    if (this.trial < 5000 || this.trial > 3_600_000)
      throw new UsageError("--trial must be from 5s to 1h: long enough for an agent to start and log in");
    const client = await this.connect();
    const model = await this.model();
    const { releases, refused } = await client.listAgentReleases();
    const to = this.to ?? releases.find((r) => r.own)?.version ?? STEWARD_VERSION;
    if (!releases.some((r) => r.version === to)) {
      const why = refused.find((r) => r.version === to)?.reason;
      throw new StewardError(
        "not-found",
        `the controller holds no agent release ${to}: it holds ${releases.map((r) => r.version).join(", ")}${why ? `; ${why}` : ""}`,
        { reason: "agent-release-unknown" },
      );
    }
    const plan = planModelUpgrade(await client.status(model), to, batch);
    this.printPlan(model, plan, batch);
    if (this.dryRun) {
      this.out("Dry run: nothing was changed.");
      return 0;
    }
    if (plan.waves.length === 0) {
      this.out(`Every machine agent of model "${model}" already runs ${to}: nothing to do.`);
      return 0;
    }
    const t0 = Date.now();
    await runModelUpgrade({
      client,
      model,
      plan,
      trialSeconds: Math.round(this.trial / 1000),
      timeoutMs: Math.max(this.timeout, this.trial + 30_000),
      progress: (l) => this.progress(l),
    });
    const count = plan.waves.flat().length;
    this.out(
      `Model "${model}": ${count} machine agent${count === 1 ? "" : "s"} moved to ${to} in ${((Date.now() - t0) / 1000).toFixed(1)} s.`,
    );
    return 0;
  }

  private printPlan(model: string, plan: ModelUpgradePlan, batch: number): void {
    this.out(
      `Agent upgrade plan for model "${model}": to ${plan.to}, ${batch} machine${batch === 1 ? "" : "s"} of each application at a time, leaders' machines last`,
    );
    for (const [i, wave] of plan.waves.entries())
      for (const s of wave)
        this.out(
          `  wave ${i + 1}: machine ${s.machine}: ${s.from} -> ${plan.to}${s.apps.length ? ` (${s.apps.join(", ")}${s.leads.length ? `; leader of ${s.leads.join(", ")}` : ""})` : " (no units)"}`,
        );
    for (const id of plan.done) this.out(`  -  machine ${id}: already at ${plan.to}`);
    for (const s of plan.skipped) this.out(`  -  machine ${s.machine}: left as it is: ${s.why}`);
  }
}
