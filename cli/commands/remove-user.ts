/** `steward remove-user`: removes a user and their access to every model (superusers). */
import { Command, Option, UsageError } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class RemoveUserCommand extends ControllerCommand {
  static override paths = [["remove-user"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "remove a user from the controller",
    details: `
      Removes the user, their access to every model and any registration string of theirs; their
      tokens stop working on every replica at once. Models they own stay. You cannot remove yourself
      or the last enabled superuser. To keep the user but stop them for now, use
      \`steward disable-user\`.
    `,
    examples: [["Remove alice", "$0 remove-user alice --yes"]],
  });

  name = Option.String({ required: true, name: "user" });
  yes = Option.Boolean("-y,--yes", false, { description: "Confirm the removal" });

  async run(): Promise<number> {
    if (!this.yes)
      throw new UsageError(
        `this removes user "${this.name}" and their access to every model: pass --yes to confirm (or steward disable-user ${this.name} to keep them)`,
      );
    await (await this.connect()).removeUser(this.name);
    this.out(`User ${this.name} removed.`);
    return 0;
  }
}
