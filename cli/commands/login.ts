import { Command, Option, UsageError } from "clipanion";
import { ControllerClient } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { readAll } from "../read-password";

export default class LoginCommand extends ControllerCommand {
  static override paths = [["login"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "log in to a controller again, or as another user",
    details: `
      Exchanges a password for a token and stores both for the controller. The password is read
      from standard input with \`--password-stdin\` (so it never shows in the process list), or
      taken from the STEWARD_PASSWORD environment variable; otherwise the stored one is used.
    `,
    examples: [
      ["Refresh the token for the current controller", "$0 login"],
      ["Log in as another user", 'echo "$PW" | $0 login --user alice --password-stdin'],
    ],
  });

  user = Option.String("-u,--user", { description: "User to log in as (default: the stored user)" });
  passwordStdin = Option.Boolean("--password-stdin", false, { description: "Read the password from standard input" });

  async run(): Promise<number> {
    const { name, entry, cfg } = await this.resolveController();
    let password =
      this.context.env.STEWARD_PASSWORD ?? (this.user && this.user !== entry.user ? undefined : entry.password);
    if (this.passwordStdin) password = (await readAll(this.context.stdin)).replace(/\r?\n$/, "");
    if (!password) throw new UsageError("no password: pass --password-stdin (or set STEWARD_PASSWORD)");
    const user = this.user || entry.user;
    if (!user) throw new UsageError(`no user recorded for "${name}": pass --user`);
    const client = new ControllerClient({ addresses: entry.addresses, caCert: entry.caCert, user, password });
    try {
      const token = await client.login();
      cfg.controllers[name] = { ...entry, user, password, token };
      await this.saveConfig(cfg);
      this.out(`Logged in to "${name}" as ${user}.`);
    } finally {
      client.close();
    }
    return 0;
  }
}
