import { Command, Option, UsageError } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class AddUserCommand extends ControllerCommand {
  static override paths = [["add-user"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "create a user on the controller",
    details:
      "Creates a user who can log in with the given password. Give them access to models with `steward grant`. The password is read from STEWARD_NEW_PASSWORD or standard input, never from the command line.",
    examples: [["Add alice", 'echo "$PW" | $0 add-user alice']],
  });

  name = Option.String({ required: true, name: "user" });
  superuser = Option.Boolean("--superuser", false, { description: "Make the user a controller superuser" });

  async run(): Promise<number> {
    let password = this.context.env.STEWARD_NEW_PASSWORD;
    if (!password) {
      password = await new Promise<string>((resolve) => {
        let s = "";
        this.context.stdin.on("data", (d: Buffer) => {
          s += d.toString();
        });
        this.context.stdin.on("end", () => resolve(s.trim()));
      });
    }
    if (!password || password.length < 8)
      throw new UsageError(
        "the new user's password must be at least 8 characters (set STEWARD_NEW_PASSWORD or pipe it in)",
      );
    const client = await this.connect();
    await client.createUser(this.name, password, this.superuser);
    this.out(`User ${this.name} created${this.superuser ? " (superuser)" : ""}.`);
    return 0;
  }
}
