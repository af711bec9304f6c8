import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";

export default class AddMachineCommand extends ModelCommand {
  static override paths = [["add-machine"]];
  static override usage = Command.Usage({
    category: "Machines",
    description: "add machines to the model",
    details: `
      \`local\` starts an agent process on the controller's host with a directory of its own, so many
      machines can run on one laptop without root or SSH. \`manual\` only registers the machine and
      prints the agent credential once, for an agent you start yourself.
    `,
    examples: [["Add a local machine", "$0 add-machine local"], ["Add three", "$0 add-machine local -n 3"]],
  });

  substrate = Option.String({ required: true, name: "local|manual" });
  count = Option.String("-n", "1", { description: "How many machines" });

  async run(): Promise<number> {
    if (this.substrate !== "local" && this.substrate !== "manual") throw new UsageError(`machines come from "local" or "manual" here (ssh:user@host arrives with the SSH substrate), got "${this.substrate}"`);
    const n = Number(this.count);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`-n must be a whole number of at least 1, got "${this.count}"`);
    const client = await this.connect();
    const res = await client.addMachines(await this.model(), this.substrate, n);
    for (const m of res.machines) this.out(m.credential ? `Created machine ${m.id}; its agent credential (shown once): ${m.credential}` : `Created machine ${m.id}.`);
    return 0;
  }
}
