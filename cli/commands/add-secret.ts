import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";
import { VALUE_SOURCES_HELP, readSecretValues, secretName } from "../secret-values";

export default class AddSecretCommand extends ModelCommand {
  static override paths = [["add-secret"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "add a user secret: values the model's applications may be granted, kept sealed",
    details: `
      Adds a secret owned by the model, at revision 1, and prints its uri (\`secret:<id>\`). Nothing
      can read it until it is granted: \`steward grant-secret NAME APP\` lets APP's units read it, for
      example through a config option of type \`secret\` (\`steward config APP key=secret:<id>\`; the
      operator reads it with \`secret-get\`). Adding the same name with the same values again changes
      nothing.

      ${VALUE_SOURCES_HELP}
    `,
    examples: [
      ["From a file (YAML or JSON)", "$0 add-secret api-token --file token.yaml"],
      ["From standard input", "printf 'token=%s\\n' \"$TOKEN\" | $0 add-secret api-token -"],
      ["A key from a file's content", "$0 add-secret tls key#file=server.key cert#file=server.crt"],
      ["On the command line (lands in shell history)", "$0 add-secret demo username=admin"],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  values = Option.Rest({ name: "key=value|key#file=PATH|-" });
  file = Option.String("--file", { description: "A YAML or JSON map of key to value" });
  description = Option.String("--description", { description: "What it is for (shown by secrets and show-secret)" });

  async run(): Promise<number> {
    const name = secretName(this.name);
    const values = await readSecretValues(this.context, this.values, this.file);
    if (!values)
      throw new UsageError(
        "give the secret's values: key=value or key#file=PATH arguments, --file F, or - to read them from standard input",
      );
    const client = await this.connect();
    const added = await client.addSecret(await this.model(), name, values, this.description);
    this.out(added.uri);
    this.progress(
      `Secret ${name} is ${added.uri} (revision ${added.revision}). Let an application read it: steward grant-secret ${name} APP`,
    );
    return 0;
  }
}
