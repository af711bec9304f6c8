import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class RevokeCommand extends ControllerCommand {
  static override paths = [["revoke"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "take away a user's access to a model",
    details:
      "The user can no longer read or change the model; their open status watches of it are closed. Give access again with `steward grant`.",
    examples: [["Take away alice's access to model prod", "$0 revoke alice prod"]],
  });

  user = Option.String({ required: true, name: "user" });
  model = Option.String({ required: true, name: "model" });

  async run(): Promise<number> {
    const client = await this.connect();
    await client.revoke(this.model, this.user);
    this.out(`Revoked ${this.user}'s access to ${this.model}.`);
    return 0;
  }
}
