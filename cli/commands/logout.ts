import { Command, Option, UsageError } from "clipanion";
import { ControllerClient, StewardError } from "../../api/core";
import { ControllerCommand } from "../base-command";

export default class LogoutCommand extends ControllerCommand {
  static override paths = [["logout"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "log out of a controller",
    details: `
      Revokes the token this client holds (on every replica at once) and forgets the stored token
      and password. Log in again with \`steward login --password-stdin\`. The admin password made
      at bootstrap is stored only here: set your own with \`steward change-password\` first, or pass
      \`--force\` to forget it anyway.
    `,
    examples: [["Log out of the current controller", "$0 logout"]],
  });

  force = Option.Boolean("--force", false, {
    description: "Log out even if the stored password is the only copy of a generated one",
  });

  async run(): Promise<number> {
    const { name, entry, cfg } = await this.resolveController();
    if (entry.generatedPassword && entry.password && !this.force) {
      throw new UsageError(
        `the ${entry.user} password of "${name}" was generated at bootstrap and is stored only in this client: set your own first (steward change-password), or pass --force to forget it`,
      );
    }
    if (entry.token) {
      const client = new ControllerClient({ addresses: entry.addresses, caCert: entry.caCert, token: entry.token });
      try {
        await client.logout();
      } catch (err) {
        // A token that no longer works (expired, revoked) needs no revoking.
        if (!StewardError.isInstance(err) || err.code !== "unauthorized") throw err;
      } finally {
        client.close();
      }
    }
    const { password: _password, token: _token, generatedPassword: _generated, ...rest } = entry;
    cfg.controllers[name] = rest;
    await this.saveConfig(cfg);
    this.out(`Logged out of "${name}". Log in again with: steward login --password-stdin`);
    return 0;
  }
}
