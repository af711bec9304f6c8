import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { appNames, secretRef } from "../secret-values";

export default class RevokeSecretCommand extends ModelCommand {
  static override paths = [["revoke-secret"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "take back applications' access to a user secret",
    details: "Their units' next `secret-get` of it fails; what they read before stays wherever they put it.",
    examples: [["Stop web reading api-token", "$0 revoke-secret api-token web"]],
  });

  secret = Option.String({ required: true, name: "name|uri" });
  apps = Option.Rest({ required: 1, name: "application" });

  async run(): Promise<number> {
    const ref = secretRef(this.secret);
    const apps = appNames(this.apps);
    const info = await (await this.connect()).revokeSecret(await this.model(), ref, apps);
    this.out(`${apps.join(", ")} may no longer read ${info.name ?? ref} (${info.uri}).`);
    return 0;
  }
}
