/** `steward whoami`: the current controller, model and user, as the controller sees the stored login. */
import { Command, Option, UsageError } from "clipanion";
import { ControllerCommand } from "../base-command";
import { stringify } from "../yaml-output";

export default class WhoamiCommand extends ControllerCommand {
  static override paths = [["whoami"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "show the current controller, model and user",
    details: `
      Asks the controller who this client's login is (so a revoked or expired login, or a disabled
      user, shows as an error here rather than on the next command), and prints it with the current
      controller and model.
    `,
    examples: [
      ["Who am I", "$0 whoami"],
      ["As JSON", "$0 whoami --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular, json or yaml" });

  async run(): Promise<number> {
    if (!["tabular", "json", "yaml"].includes(this.format))
      throw new UsageError(`--format must be tabular, json or yaml, got "${this.format}"`);
    const { name, entry } = await this.resolveController();
    const session = await (await this.connect()).session();
    const me = {
      controller: name,
      model: entry.currentModel ?? null,
      user: session.user,
      superuser: session.superuser,
      loginExpiresAt: session.expiresAt,
    };
    if (this.format === "json") this.out(JSON.stringify(me, null, 2));
    else if (this.format === "yaml") this.context.stdout.write(stringify(me));
    else {
      this.out(`Controller:  ${me.controller}`);
      this.out(`Model:       ${me.model ?? "(none: steward switch MODEL)"}`);
      this.out(`User:        ${me.user}${me.superuser ? " (superuser)" : ""}`);
    }
    return 0;
  }
}
