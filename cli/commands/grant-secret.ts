import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { appNames, secretRef } from "../secret-values";

export default class GrantSecretCommand extends ModelCommand {
  static override paths = [["grant-secret"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "let applications' units read a user secret",
    details: `
      The applications' units may then read the secret with \`secret-get secret:<id>\`, typically the
      value of a config option of type \`secret\` (\`secret-get "$(config-get api-key)" token\`).
      \`revoke-secret\` takes it back.
    `,
    examples: [["Let web read api-token", "$0 grant-secret api-token web"]],
  });

  secret = Option.String({ required: true, name: "name|uri" });
  apps = Option.Rest({ required: 1, name: "application" });

  async run(): Promise<number> {
    const ref = secretRef(this.secret);
    const apps = appNames(this.apps);
    const info = await (await this.connect()).grantSecret(await this.model(), ref, apps);
    this.out(`${apps.join(", ")} may read ${info.name ?? ref} (${info.uri}).`);
    return 0;
  }
}
