import { Command, Option, UsageError } from "clipanion";
import type { MigrationInfo } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { printMigration, waitForMigration } from "../migration-progress";
import { routes } from "../../api/core";

export default class MigrateCommand extends ControllerCommand {
  static override paths = [["migrate"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "move a model to another controller, its agents and units with it",
    details: `
      Moves MODEL from the current controller (or -c) to TARGET, another controller this client
      knows (steward controllers), in Juju's phases: QUIESCE (every agent finishes its hook, pauses
      and checks it can reach the target), IMPORT (the model is staged on the target, not yet live),
      VALIDATION (each agent checks the staged model against what it holds; then the target makes
      the model live in one transaction), SUCCESS (agents switch to the target), LOGTRANSFER, REAP
      (the source forgets the model) and DONE. Any failure before SUCCESS aborts: the staged copy
      is removed from the target and the model goes on here as before. Hooks pause for the move
      and resume on the target; none is skipped or run twice.

      Needs a superuser of both controllers (the target's login is taken from this client's entry
      for it). Every machine's agent must be connected. Afterwards the source answers requests for
      the model with where it went, and this client (and the Pulumi provider) follow.

      Waits and shows each phase unless --no-wait. --abort stops a migration that has not reached
      SUCCESS.
    `,
    examples: [
      ["Move model demo to controller prod-2", "$0 migrate demo prod-2"],
      ["Start it and return at once", "$0 migrate demo prod-2 --no-wait"],
      ["Abort a migration in progress", "$0 migrate demo --abort"],
    ],
  });

  model = Option.String({ required: true, name: "model" });
  target = Option.String({ required: false, name: "target" });
  abort = Option.Boolean("--abort", false, { description: "Abort the model's migration (before SUCCESS)" });
  wait = Option.Boolean("--wait", true, {
    description: "Wait until the migration is over, showing each phase (--no-wait: return once it started)",
  });
  agentWait = Option.String("--agent-wait", {
    description: "Seconds agents have to answer each phase (default 900, Juju's 15 minutes)",
  });

  async run(): Promise<number> {
    const client = await this.connect();
    if (this.abort) {
      if (this.target) throw new UsageError("--abort takes only the model");
      const info = await client.call(routes.abortMigration, { model: this.model });
      this.out(`Aborting the migration of ${this.model} to ${info.target.name}.`);
      return this.wait
        ? this.finish(await waitForMigration(client, this.model, (line) => this.out(line)), "ABORTDONE")
        : 0;
    }
    if (!this.target)
      throw new UsageError(
        "name the controller to move the model to: steward migrate MODEL TARGET (steward controllers lists them)",
      );
    const { name: source } = await this.resolveController();
    if (this.target === source) throw new UsageError(`${this.target} is the controller the model is on`);
    const cfg = await this.clientConfig();
    const t = cfg.controllers[this.target];
    if (!t)
      throw new UsageError(
        `controller "${this.target}" is not known here (known: ${Object.keys(cfg.controllers).join(", ")}); log in to it first (steward login)`,
      );
    if (!t.password && !t.token)
      throw new UsageError(`this client holds no login for ${this.target}: run steward login -c ${this.target} first`);
    let agentWaitSeconds: number | undefined;
    if (this.agentWait !== undefined) {
      agentWaitSeconds = Number(this.agentWait);
      if (!Number.isInteger(agentWaitSeconds) || agentWaitSeconds < 5)
        throw new UsageError(`--agent-wait must be a whole number of seconds, at least 5 (got "${this.agentWait}")`);
    }
    const info = await client.call(
      routes.migrate,
      { model: this.model },
      {
        target: {
          name: this.target,
          addresses: t.addresses,
          caCert: t.caCert,
          user: t.user,
          ...(t.password ? { password: t.password } : {}),
          ...(t.token ? { token: t.token } : {}),
        },
        ...(agentWaitSeconds !== undefined ? { agentWaitSeconds } : {}),
      },
    );
    this.out(`Migrating ${this.model} to ${this.target} (migration ${info.id}).`);
    if (!this.wait) {
      this.out(`Follow it with: steward show-migration ${this.model}`);
      return 0;
    }
    return this.finish(await waitForMigration(client, this.model, (line) => this.out(line)));
  }

  /** Prints where it ended; exit code 0 when it ended as wanted (moved, or aborted when asked to). */
  private finish(info: MigrationInfo, wanted: MigrationInfo["phase"] = "DONE"): number {
    printMigration(info, (line) => this.out(line));
    return info.phase === wanted ? 0 : 1;
  }
}
