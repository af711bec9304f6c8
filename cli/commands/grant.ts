import { Command, Option, UsageError } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class GrantCommand extends ControllerCommand {
  static override paths = [["grant"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "give a user access to a model",
    details:
      "`read` lets the user see status; `write` lets them deploy and change applications; `admin` also lets them destroy the model and grant access.",
    examples: [["Let alice read model prod", "$0 grant alice read prod"]],
  });

  user = Option.String({ required: true, name: "user" });
  access = Option.String({ required: true, name: "read|write|admin" });
  model = Option.String({ required: true, name: "model" });

  async run(): Promise<number> {
    if (!["read", "write", "admin"].includes(this.access))
      throw new UsageError(`access must be read, write or admin, got "${this.access}"`);
    const client = await this.connect();
    await client.grant(this.model, this.user, this.access as "read");
    this.out(`Granted ${this.access} on ${this.model} to ${this.user}.`);
    return 0;
  }
}
