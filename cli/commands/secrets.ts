import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";
import { secretDocument, secretsTable } from "../secret-format";
import { stringify } from "../yaml-output";

export default class SecretsCommand extends ModelCommand {
  static override paths = [["secrets"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "list the model's secrets: owner, revision, rotation, who may read them and who reads which revision",
    details: `
      Users' secrets (\`add-secret\`, owner \`model\`) and operators' (owner \`application:APP\` or
      \`unit:APP/N\`). Readers are its grants: applications, or over a relation an application or
      one unit. Tracking is which units read which revision (a unit moves to a new one with
      \`secret-get --refresh\`). Never values: \`show-secret NAME --reveal\` shows them to the user
      who made the secret or a superuser.
    `,
    examples: [
      ["List secrets", "$0 secrets"],
      ["As JSON", "$0 secrets --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular (or table), json or yaml" });

  async run(): Promise<number> {
    if (!["tabular", "table", "json", "yaml"].includes(this.format))
      throw new UsageError(`--format must be tabular, json or yaml, got "${this.format}"`);
    const { secrets } = await (await this.connect()).listSecrets(await this.model());
    if (this.format === "json") this.out(JSON.stringify(secrets, null, 2));
    else if (this.format === "yaml") this.context.stdout.write(stringify(secrets.map(secretDocument)));
    else if (secrets.length === 0) this.out("No secrets.");
    else this.context.stdout.write(secretsTable(secrets));
    return 0;
  }
}
