/** `steward disable-user`: stops a user at once (their tokens, logins and registration), keeping their access for later. */
import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class DisableUserCommand extends ControllerCommand {
  static override paths = [["disable-user"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "stop a user from using the controller, for now",
    details: `
      Every token the user holds stops working on every replica at once (open dashboards and
      status watches end), and their logins and registration are refused until
      \`steward enable-user\`. Their access to models is kept. You cannot disable yourself or the
      last enabled superuser.
    `,
    examples: [["Disable alice", "$0 disable-user alice"]],
  });

  name = Option.String({ required: true, name: "user" });

  async run(): Promise<number> {
    const r = await (await this.connect()).setUserDisabled(this.name, true);
    this.out(
      r.changed
        ? `User ${this.name} disabled: their tokens no longer work. Enable them again with: steward enable-user ${this.name}`
        : `User ${this.name} was already disabled.`,
    );
    return 0;
  }
}
