/** `steward enable-user`: lets a disabled user log in again. */
import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class EnableUserCommand extends ControllerCommand {
  static override paths = [["enable-user"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "let a disabled user use the controller again",
    details: `
      The user can log in (or register) again; tokens they held before they were disabled stay ended,
      so they log in anew (\`steward login\`).
    `,
    examples: [["Enable alice", "$0 enable-user alice"]],
  });

  name = Option.String({ required: true, name: "user" });

  async run(): Promise<number> {
    const r = await (await this.connect()).setUserDisabled(this.name, false);
    this.out(
      r.changed
        ? `User ${this.name} enabled: they can log in again (steward login).`
        : `User ${this.name} was not disabled.`,
    );
    return 0;
  }
}
