/**
 * `steward register`: how a second person starts using a controller from their own machine (Juju's
 * register). The string from `steward add-user` names the controller, its addresses and its CA's
 * fingerprint; this client fetches the CA, pins it only if the fingerprint matches, sends the one-time
 * secret with the password the user chooses, and records the controller and the login.
 */
import { Command, Option, UsageError } from "clipanion";
import { ControllerClient, StewardError, decodeRegistration } from "../../api/core";
import { BaseCommand } from "../base-command";
import { fetchPinnedCa } from "../pinned-ca";
import { promptHidden, readAll, readNewPassword } from "../read-password";

type Input = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };

export default class RegisterCommand extends BaseCommand {
  static override paths = [["register"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "start using a controller with the registration string an administrator gave you",
    details: `
      Checks that the controller's CA has the fingerprint in the string (nothing is sent to a
      controller that does not), asks you to choose a password (at least 8 characters; typed twice
      at a terminal, or read with \`--password-stdin\`), uses the string's one-time secret to set it,
      and records the controller here under its name (or \`--name\`), logged in and current.

      A string works once and expires; an administrator makes a new one with
      \`steward add-user NAME --reissue\`.
    `,
    examples: [
      ["Register with the string you were sent", "$0 register eyJ2IjoxLCJuIjoi..."],
      ["Choose the password in a script", 'echo "$PW" | $0 register --password-stdin eyJ2IjoxLCJuIjoi...'],
      ["Record the controller under another name", "$0 register --name work eyJ2IjoxLCJuIjoi..."],
    ],
  });

  registration = Option.String({ required: true, name: "registration-string" });
  passwordStdin = Option.Boolean("--password-stdin", false, {
    description: "Read the new password from standard input (its first line)",
  });
  name = Option.String("--name", {
    description: "Name to record the controller under here (default: the controller's own name)",
  });

  async run(): Promise<number> {
    const reg = decodeRegistration(this.registration);
    const name = this.name ?? reg.controller;
    const cfg = await this.clientConfig();
    if (cfg.controllers[name])
      throw new UsageError(
        `a controller named "${name}" is already known here: pass --name to record this one under another name`,
      );
    if (Date.parse(reg.expiresAt) < Date.now())
      throw new StewardError(
        "unauthorized",
        `this registration string expired at ${reg.expiresAt}: ask your administrator for a new one (steward add-user ${reg.user} --reissue)`,
        { reason: "registration-expired" },
      );
    const caCert = await fetchPinnedCa(reg.addresses, reg.caFingerprint);
    const password = await this.newPassword(reg.user);
    const client = new ControllerClient({ addresses: reg.addresses, caCert });
    try {
      const done = await client.register(reg.user, reg.secret, password);
      cfg.controllers[name] = { addresses: client.addresses, caCert, user: reg.user, password, token: done.token };
      cfg.current = name;
      await this.saveConfig(cfg);
    } finally {
      client.close();
    }
    this.out(`Registered as ${reg.user} on controller "${name}", which is now the current controller.`);
    this.out("See the models you can reach with: steward models");
    return 0;
  }

  private async newPassword(user: string): Promise<string> {
    const stdin = this.context.stdin as Input;
    if (this.passwordStdin) {
      const password = (await readAll(stdin)).split(/\r?\n/)[0] ?? "";
      if (password.length < 8) throw new UsageError("the new password must be at least 8 characters");
      return password;
    }
    const password = await readNewPassword(this.context, `Choose a password for ${user}: `);
    if (stdin.isTTY && stdin.setRawMode && !this.context.env.STEWARD_NEW_PASSWORD) {
      const again = await promptHidden(stdin, this.context.stderr, "Type it again: ");
      if (again !== password) throw new UsageError("the two passwords differ: nothing was changed, run it again");
    }
    return password;
  }
}
