import { Command, Option, UsageError } from "clipanion";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { ControllerClient } from "../../api";
import { dataFiles, stopProcess } from "../../controller";
import { BaseCommand } from "../base-command";
import { readPidFile } from "../local-controller";

export default class DestroyControllerCommand extends BaseCommand {
  static override paths = [["destroy-controller"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "destroy a controller on this host and everything it runs",
    details: `
      Destroys every model (running each unit's stop and remove hooks, up to \`--timeout\`), then stops
      the controller and any agents it started, deletes its data directory and forgets it. Works for
      controllers bootstrapped on this host. Asks for \`--yes\`: this cannot be undone.
    `,
    examples: [["Destroy the controller called local", "$0 destroy-controller local --yes"]],
  });

  name = Option.String({ required: true, name: "name" });
  yes = Option.Boolean("-y,--yes", false, { description: "Confirm the destruction" });
  timeout = Option.String("--timeout", "60", { description: "Seconds to wait for models to be destroyed cleanly before forcing" });

  async run(): Promise<number> {
    const cfg = await this.clientConfig();
    const entry = cfg.controllers[this.name];
    if (!entry) throw new UsageError(`controller "${this.name}" is not known here (known: ${Object.keys(cfg.controllers).join(", ") || "none"})`);
    if (!entry.dataDir) throw new UsageError(`controller "${this.name}" does not run on this host; destroy-controller only handles local controllers for now`);
    if (!this.yes) throw new UsageError(`this destroys controller "${this.name}", all its models and their machines: pass --yes to confirm`);
    const timeoutS = Number(this.timeout);
    if (!Number.isFinite(timeoutS) || timeoutS < 0) throw new UsageError("--timeout must be a number of seconds");

    const client = new ControllerClient({ addresses: entry.addresses, caCert: entry.caCert, user: entry.user, ...(entry.password ? { password: entry.password } : {}), timeoutMs: 5000 });
    try {
      const models = await client.listModels().catch(() => []);
      for (const m of models) {
        this.progress(`Destroying model ${m.name}`);
        await client.destroyModel(m.name).catch(() => undefined);
      }
      const deadline = Date.now() + timeoutS * 1000;
      while (Date.now() < deadline && (await client.listModels().catch(() => [])).length > 0) await new Promise((r) => setTimeout(r, 300));
      for (const m of await client.listModels().catch(() => [])) {
        this.progress(`Model ${m.name} did not finish in time; forcing`);
        await client.destroyModel(m.name, true).catch(() => undefined);
      }
    } finally {
      client.close();
    }
    this.progress("Stopping the controller");
    const pid = await readPidFile(join(entry.dataDir, dataFiles.pid));
    if (pid) await stopProcess(pid);
    await this.stopLeftoverAgents(join(entry.dataDir, dataFiles.machines));
    await rm(entry.dataDir, { recursive: true, force: true });
    delete cfg.controllers[this.name];
    if (cfg.current === this.name) delete cfg.current;
    await this.saveConfig(cfg);
    this.out(`Controller "${this.name}" destroyed.`);
    return 0;
  }

  /** Agents of machines whose removal did not finish (forced models). */
  private async stopLeftoverAgents(machinesDir: string): Promise<void> {
    for (const model of await readdir(machinesDir).catch(() => [] as string[])) {
      for (const machine of await readdir(join(machinesDir, model)).catch(() => [] as string[])) {
        const pid = await readPidFile(join(machinesDir, model, machine, "agent.pid"));
        if (pid) await stopProcess(pid);
      }
    }
  }
}
