import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveMachineCommand extends ModelCommand {
  static override paths = [["remove-machine"]];
  static override usage = Command.Usage({
    category: "Machines",
    description: "remove machines from the model",
    details:
      "A machine that still runs units is refused unless `--force`, which removes those units with it. An SSH machine's agent stops and uninstalls itself (its service and files), leaving the host clean; this waits for that.",
    examples: [["Remove machine 3", "$0 remove-machine 3"]],
  });

  ids = Option.Rest({ required: 1, name: "machine" });
  force = Option.Boolean("--force", false, { description: "Also remove the units on it" });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    for (const id of this.ids) {
      await client.removeMachine(model, id, this.force);
      this.progress(`Removing machine ${id}`);
    }
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const left = (await client.listMachines(model)).filter((m) => this.ids.includes(m.id));
      if (left.length === 0) {
        this.out(`Removed machine${this.ids.length === 1 ? "" : "s"} ${this.ids.join(", ")}.`);
        return 0;
      }
      await new Promise((r) => setTimeout(r, 300));
    }
    this.context.stderr.write("ERROR the machines are still being removed after 120 s; see steward machines\n");
    return 1;
  }
}
