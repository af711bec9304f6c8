import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";
import { VALUE_SOURCES_HELP, readSecretValues, secretName, secretRef } from "../secret-values";

export default class UpdateSecretCommand extends ModelCommand {
  static override paths = [["update-secret"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "give a user secret new values (a new revision), a new name or description",
    details: `
      New values make a new revision; the units that read the secret get \`secret-changed\` and move to
      it with \`secret-get --refresh\` (older revisions no unit tracks are pruned). A new name or
      description alone makes no revision. The values replace the old ones whole: give every key.

      ${VALUE_SOURCES_HELP}
    `,
    examples: [
      ["New values from a file", "$0 update-secret api-token --file token.yaml"],
      ["From standard input", "$0 update-secret api-token - < token.env"],
      ["Rename it", "$0 update-secret api-token --name payments-token"],
    ],
  });

  secret = Option.String({ required: true, name: "name|uri" });
  values = Option.Rest({ name: "key=value|key#file=PATH|-" });
  file = Option.String("--file", { description: "A YAML or JSON map of key to value" });
  newName = Option.String("--name", { description: "Its new name" });
  description = Option.String("--description", { description: "Its new description" });

  async run(): Promise<number> {
    const ref = secretRef(this.secret);
    const newName = this.newName !== undefined ? secretName(this.newName) : undefined;
    const values = await readSecretValues(this.context, this.values, this.file);
    if (!values && newName === undefined && this.description === undefined)
      throw new UsageError(
        "give new values (key=value or key#file=PATH arguments, --file F, or - for standard input), --name or --description",
      );
    const client = await this.connect();
    const done = await client.updateSecret(await this.model(), ref, {
      ...(values ? { values } : {}),
      ...(newName !== undefined ? { name: newName } : {}),
      ...(this.description !== undefined ? { description: this.description } : {}),
    });
    this.out(
      values
        ? `Secret ${newName ?? ref} (${done.uri}) is at revision ${done.revision}.`
        : `Secret ${newName ?? ref} (${done.uri}) updated; still revision ${done.revision}.`,
    );
    return 0;
  }
}
