import { Command, Option } from "clipanion";
import * as t from "typanion";
import { CREDENTIAL_KINDS, CREDENTIAL_SUBSTRATES } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { readCredentialAttributes } from "../credential-file";

const kinds = CREDENTIAL_SUBSTRATES.map(
  (s) => `${s}: ${[...CREDENTIAL_KINDS[s].required, ...CREDENTIAL_KINDS[s].optional.map((o) => `[${o}]`)].join(", ")}`,
).join("; ");

export default class AddCredentialCommand extends ControllerCommand {
  static override paths = [["add-credential"]];
  static override usage = Command.Usage({
    category: "Credentials",
    description: "store a credential the controller makes machines with",
    details: `
      Stores a credential on the controller for models on a cloud (\`steward add-model NAME --substrate S --credential C\`).
      The controller keeps it encrypted, with a key that is not in its store; no command, log or
      status shows a secret attribute again. Only controller superusers can add, list or remove credentials.

      Attributes by substrate: ${kinds}.

      \`--file\` takes JSON, YAML, or key = value lines such as ~/.aws/credentials (\`--profile\`
      picks a section; \`aws_\` prefixes and underscores are accepted). \`--from-env\` reads
      AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (aws) or VSPHERE_USER and
      VSPHERE_PASSWORD (vsphere). For ssh, \`--file\` may be the private key itself, with \`--user\`.
      Adding the same values again changes nothing; other values need \`--replace\`.
    `,
    examples: [
      [
        "From your AWS credentials file",
        "$0 add-credential prod --substrate aws --file ~/.aws/credentials --profile prod",
      ],
      ["From the environment", "$0 add-credential prod --substrate aws --from-env"],
      ["A vCenter account", "$0 add-credential lab --substrate vsphere --file vcenter.yaml"],
      ["An SSH key", "$0 add-credential hosts --substrate ssh --file ~/.ssh/id_ed25519 --user root"],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  substrate = Option.String("--substrate", {
    required: true,
    description: `What it is for: ${CREDENTIAL_SUBSTRATES.join(", ")}`,
    validator: t.isEnum(CREDENTIAL_SUBSTRATES),
  });
  file = Option.String("--file", {
    description: "File holding the attributes (JSON, YAML, key = value) or, for ssh, the private key",
  });
  profile = Option.String("--profile", "default", {
    description: "Section of an INI file such as ~/.aws/credentials (default: default)",
  });
  fromEnv = Option.Boolean("--from-env", false, {
    description: "Read the attributes from the environment, as the cloud's own tools do",
  });
  user = Option.String("--user", { description: "The user name (ssh, vsphere)" });
  replace = Option.Boolean("--replace", false, { description: "Replace the values of an existing credential" });

  async run(): Promise<number> {
    const attributes = await readCredentialAttributes(this.context, this.substrate, {
      file: this.file,
      profile: this.profile,
      fromEnv: this.fromEnv,
      user: this.user,
    });
    const res = await (await this.connect()).putCredential(this.name, this.substrate, attributes, this.replace);
    this.out(
      res.created
        ? `Credential "${this.name}" (${this.substrate}) stored.`
        : res.changed
          ? `Credential "${this.name}" replaced.`
          : `Credential "${this.name}" already holds these values; nothing changed.`,
    );
    return 0;
  }
}
