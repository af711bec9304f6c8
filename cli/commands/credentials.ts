import { Command, Option } from "clipanion";
import { table } from "../../api/core";
import { ControllerCommand } from "../base-command";

export default class CredentialsCommand extends ControllerCommand {
  static override paths = [["credentials"]];
  static override usage = Command.Usage({
    category: "Credentials",
    description: "list the credentials stored on the controller",
    details:
      "Shows each credential's substrate, the attributes that are not secret (identifiers masked), and the models using it. Secret attributes are never shown.",
    examples: [
      ["List credentials", "$0 credentials"],
      ["As JSON", "$0 credentials --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const { credentials } = await (await this.connect()).listCredentials();
    if (this.format === "json") {
      this.out(JSON.stringify(credentials, null, 2));
      return 0;
    }
    if (credentials.length === 0) {
      this.out("No credentials. Add one with: steward add-credential NAME --substrate aws --file F");
      return 0;
    }
    this.context.stdout.write(
      table(
        ["Credential", "Substrate", "Attributes", "Models", "Owner"],
        credentials.map((c) => [
          c.name,
          c.substrate,
          Object.entries(c.attributes)
            .map(([k, v]) => `${k}=${v}`)
            .join(" ") || "-",
          c.models.join(",") || "-",
          c.owner,
        ]),
      ),
    );
    return 0;
  }
}
