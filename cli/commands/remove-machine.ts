import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveMachineCommand extends ModelCommand {
  static override paths = [["remove-machine"]];
  static override usage = Command.Usage({
    category: "Machines",
    description: "remove machines from the model",
    details: "A machine that still runs units is refused unless `--force`, which removes those units with it.",
    examples: [["Remove machine 3", "$0 remove-machine 3"]],
  });

  ids = Option.Rest({ required: 1, name: "machine" });
  force = Option.Boolean("--force", false, { description: "Also remove the units on it" });

  async run(): Promise<number> {
    const client = await this.connect();
    const model = await this.model();
    for (const id of this.ids) {
      await client.removeMachine(model, id, this.force);
      this.out(`Removing machine ${id}.`);
    }
    return 0;
  }
}
