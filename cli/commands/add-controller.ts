/**
 * `steward add-controller`: records a controller this client has never seen, for a user made
 * another way than by a registration string (a password given by an administrator). Its CA is
 * fetched and kept only if it has the fingerprint given, which the administrator reads from
 * `steward show-controller`; then `steward login`.
 */
import { Command, Option, UsageError } from "clipanion";
import { ControllerClient, routes, splitAddress } from "../../api/core";
import { BaseCommand } from "../base-command";
import { fetchPinnedCa } from "../pinned-ca";

export default class AddControllerCommand extends BaseCommand {
  static override paths = [["add-controller"]];
  static override usage = Command.Usage({
    category: "Users",
    description: "record a controller by its address and CA fingerprint",
    details: `
      Fetches the controller's CA from ADDRESS, checks it has the SHA-256 fingerprint given (as
      \`steward show-controller\` prints it, with or without colons; nothing is recorded otherwise),
      checks the controller answers with a certificate that CA signed, and records it here. Then log
      in with \`steward login\`. Users with a registration string use \`steward register\` instead.
    `,
    examples: [
      ["Record controller lab", "$0 add-controller lab 10.0.0.5:17070 --ca-fingerprint 3A:7F:...:C2 --user alice"],
      ["Then log in", 'echo "$PW" | $0 login -c lab --password-stdin'],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  addresses = Option.Rest({ required: 1, name: "address" });
  caFingerprint = Option.String("--ca-fingerprint", {
    required: true,
    description: "SHA-256 fingerprint of the controller's CA (steward show-controller prints it)",
  });
  user = Option.String("-u,--user", { description: "The user you will log in as (steward login can also say)" });

  async run(): Promise<number> {
    for (const a of this.addresses) splitAddress(a);
    const cfg = await this.clientConfig();
    if (cfg.controllers[this.name])
      throw new UsageError(`a controller named "${this.name}" is already known here: choose another name`);
    const caCert = await fetchPinnedCa(this.addresses, this.caFingerprint);
    const client = new ControllerClient({ addresses: this.addresses, caCert });
    try {
      await client.call(routes.health, {}); // its certificate must be signed by the CA just pinned
      cfg.controllers[this.name] = { addresses: client.addresses, caCert, user: this.user ?? "" };
      cfg.current ??= this.name;
    } finally {
      client.close();
    }
    await this.saveConfig(cfg);
    this.out(`Controller "${this.name}" recorded (its CA matches the fingerprint).`);
    this.out(
      `Log in with: echo "$PASSWORD" | steward login -c ${this.name}${this.user ? "" : " -u USER"} --password-stdin`,
    );
    return 0;
  }
}
