/** `steward users`: the controller's users, for superusers. */
import { Command, Option, UsageError } from "clipanion";
import type { UserInfo } from "../../api/core";
import { table } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { stringify } from "../yaml-output";

export default class UsersCommand extends ControllerCommand {
  static override paths = [["users"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "list the controller's users",
    details: `
      Shows each user: whether a superuser, whether disabled, whether they have registered (or their
      registration string is still pending, or expired unused), and when and by whom they were added.
      Controller superusers only; anyone can see themselves with \`steward show-user\`.
    `,
    examples: [
      ["List users", "$0 users"],
      ["As JSON", "$0 users --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular, json or yaml" });

  async run(): Promise<number> {
    if (!["tabular", "json", "yaml"].includes(this.format))
      throw new UsageError(`--format must be tabular, json or yaml, got "${this.format}"`);
    const users = await (await this.connect()).listUsers();
    if (this.format === "json") this.out(JSON.stringify(users, null, 2));
    else if (this.format === "yaml") this.context.stdout.write(stringify(users));
    else
      this.context.stdout.write(
        table(
          ["User", "Superuser", "Disabled", "State", "Created", "By"],
          users.map((u) => [
            u.name,
            u.superuser ? "yes" : "no",
            u.disabled ? "yes" : "no",
            describeState(u),
            u.createdAt.slice(0, 19).replace("T", " "),
            u.createdBy ?? "-",
          ]),
        ),
      );
    return 0;
  }
}

/** `registered`, `pending until …` or `expired …`. */
export function describeState(u: UserInfo): string {
  if (u.state === "registered") return "registered";
  const at = u.registrationExpiresAt?.slice(0, 16).replace("T", " ") ?? "?";
  return u.state === "pending" ? `pending until ${at}` : `expired ${at} (add-user --reissue)`;
}
