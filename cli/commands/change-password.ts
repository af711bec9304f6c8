import { Command, Option, UsageError } from "clipanion";
import { ControllerClient } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { readNewPassword } from "../read-password";

export default class ChangePasswordCommand extends ControllerCommand {
  static override paths = [["change-password"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "change your password, or (superuser) reset another user's",
    details: `
      The new password is read at a prompt, from standard input, or from STEWARD_NEW_PASSWORD;
      never from the command line. Changing your own password needs the current one: the stored
      one, or STEWARD_PASSWORD. Every token the user held stops working on every replica; this
      client logs in again with the new password.
    `,
    examples: [
      ["Change your own password", "$0 change-password"],
      ["Reset bob's password (superuser)", 'echo "$PW" | $0 change-password bob'],
    ],
  });

  user = Option.String({ required: false, name: "user" });

  async run(): Promise<number> {
    const { name, entry, cfg } = await this.resolveController();
    const target = this.user ?? entry.user;
    const own = target === entry.user;
    const current = own ? (this.context.env.STEWARD_PASSWORD ?? entry.password) : undefined;
    if (own && !current) throw new UsageError("changing your own password needs the current one: set STEWARD_PASSWORD");
    const password = await readNewPassword(this.context, `New password for ${target}: `);
    const client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: entry.user,
      ...(entry.password ? { password: entry.password } : {}),
      ...(entry.token ? { token: entry.token } : {}),
    });
    try {
      await client.changePassword(target, password, current);
    } finally {
      client.close();
    }
    if (own) {
      // Our token was revoked with the others: log in with the new password.
      const fresh = new ControllerClient({
        addresses: entry.addresses,
        caCert: entry.caCert,
        user: entry.user,
        password,
      });
      try {
        const { generatedPassword: _generated, ...rest } = entry;
        cfg.controllers[name] = { ...rest, password, token: await fresh.login() };
        await this.saveConfig(cfg);
      } finally {
        fresh.close();
      }
    }
    this.out(`Password of ${target} changed; tokens issued to ${target} before now no longer work.`);
    return 0;
  }
}
