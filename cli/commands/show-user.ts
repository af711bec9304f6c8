/** `steward show-user`: one user with the models they can reach (yourself, or anyone as a superuser). */
import { Command, Option, UsageError } from "clipanion";
import { ControllerCommand } from "../base-command";
import { stringify } from "../yaml-output";

export default class ShowUserCommand extends ControllerCommand {
  static override paths = [["show-user"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "show a user and the models they can reach",
    details: `
      Shows whether the user is a superuser or disabled, whether they have registered, when and by
      whom they were added, and their access to each model. Without a name, yourself; another user
      is a controller superuser's to see.
    `,
    examples: [
      ["Show yourself", "$0 show-user"],
      ["Show alice, as JSON", "$0 show-user alice --format json"],
    ],
  });

  user = Option.String({ required: false, name: "user" });
  format = Option.String("--format", "yaml", { description: "yaml or json" });

  async run(): Promise<number> {
    if (this.format !== "yaml" && this.format !== "json")
      throw new UsageError(`--format must be yaml or json, got "${this.format}"`);
    const { entry } = await this.resolveController();
    const info = await (await this.connect()).showUser(this.user ?? entry.user);
    if (this.format === "json") this.out(JSON.stringify(info, null, 2));
    else {
      const { name, ...rest } = info;
      this.context.stdout.write(stringify({ [name]: rest }));
    }
    return 0;
  }
}
