/**
 * `steward add-user`: a user for another person, who joins with the one-time registration string
 * this prints (`steward register`), or, for scripts, a user with a password read from standard input.
 */
import { Command, Option, UsageError } from "clipanion";
import { encodeRegistration } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { readAll } from "../read-password";
import { DURATION_HELP, isDuration } from "../validators";

type Input = NodeJS.ReadableStream & { isTTY?: boolean };

export default class AddUserCommand extends ControllerCommand {
  static override paths = [["add-user"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "add a user to the controller",
    details: `
      Prints a one-time registration string for the new user: they run \`steward register STRING\`
      on their own machine, which checks the controller's CA against the fingerprint in the string,
      asks them to choose a password and logs them in. The string works once and expires (\`--expires\`,
      default 24h); only a hash of its secret is stored. A user who lost theirs before using it gets a
      new one with \`--reissue\` (the old one stops working).

      For scripts, \`--password-stdin\` (or STEWARD_NEW_PASSWORD, or a password piped in) makes a user
      who logs in with that password instead, never taken from the command line.

      Give the user access to models with \`steward grant\`.
    `,
    examples: [
      ["Add alice and print her registration string", "$0 add-user alice"],
      ["A string good for one hour", "$0 add-user alice --expires 1h"],
      ["A new string for alice, who has not registered yet", "$0 add-user alice --reissue"],
      ["Add a superuser", "$0 add-user carol --superuser"],
      ["For a script: a user with a password", 'echo "$PW" | $0 add-user bob --password-stdin'],
    ],
  });

  name = Option.String({ required: true, name: "user" });
  superuser = Option.Boolean("--superuser", false, { description: "Make the user a controller superuser" });
  expires = Option.String("--expires", "24h", {
    description: `How long the registration string works: ${DURATION_HELP}; at most 30 days`,
    validator: isDuration(),
  });
  reissue = Option.Boolean("--reissue", false, {
    description: "Give a user who has not registered yet a new registration string",
  });
  passwordStdin = Option.Boolean("--password-stdin", false, {
    description: "Read a password from standard input instead of printing a registration string",
  });
  format = Option.String("--format", "text", { description: "text or json" });

  async run(): Promise<number> {
    if (this.format !== "text" && this.format !== "json")
      throw new UsageError(`--format must be text or json, got "${this.format}"`);
    const password = await this.password();
    const client = await this.connect();
    if (password !== undefined) {
      if (this.reissue) throw new UsageError("--reissue makes a registration string: drop the password");
      await client.createUser(this.name, password, this.superuser);
      if (this.format === "json") this.out(JSON.stringify({ user: this.name, superuser: this.superuser }));
      else this.out(`User ${this.name} created${this.superuser ? " (superuser)" : ""}.`);
      return 0;
    }
    const seconds = Math.round(this.expires / 1000);
    if (seconds < 1 || seconds > 30 * 24 * 3600)
      throw new UsageError(`--expires must be from 1s to 30 days, got ${this.expires / 1000} s`);
    const created = await client.addUserForRegistration(this.name, {
      superuser: this.superuser,
      lifetimeSeconds: seconds,
      reissue: this.reissue,
    });
    if (!created.registration) throw new UsageError("the controller answered no registration string");
    const text = encodeRegistration(created.registration);
    if (this.format === "json") {
      this.out(JSON.stringify({ user: this.name, registration: text, expiresAt: created.registration.expiresAt }));
      return 0;
    }
    this.out(
      `User ${this.name} ${this.reissue ? "has a new registration string" : "added"}${this.superuser && !this.reissue ? " (superuser)" : ""}. Send ${this.name} this string; it works once, until ${created.registration.expiresAt}:`,
    );
    this.out();
    this.out(`  steward register ${text}`);
    this.out();
    this.out(
      `On their own machine it checks the controller's CA, asks for a new password and logs them in. Give them access to a model with: steward grant ${this.name} read MODEL`,
    );
    return 0;
  }

  /** A password for script use, or undefined for a registration string. */
  private async password(): Promise<string | undefined> {
    const stdin = this.context.stdin as Input;
    let password = this.context.env.STEWARD_NEW_PASSWORD;
    // A password piped in without the flag (the older form) still works; an empty or closed input means none.
    if (password === undefined && (this.passwordStdin || !stdin.isTTY))
      password = (await readAll(stdin)).split(/\r?\n/)[0] || undefined;
    if (this.passwordStdin && password === undefined)
      throw new UsageError("--password-stdin: standard input held no password");
    if (password !== undefined && password.length < 8)
      throw new UsageError(
        "the new user's password must be at least 8 characters (pipe it in with --password-stdin, or set STEWARD_NEW_PASSWORD)",
      );
    return password;
  }
}
