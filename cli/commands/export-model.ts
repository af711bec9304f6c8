import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { routes } from "../../api/core";
import { isWholeNumber } from "../validators";
import { passphraseOptions, readPassphrase } from "../read-passphrase";

export default class ExportModelCommand extends ControllerCommand {
  static override paths = [["export-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "write a model to a file: an offline copy, or a backup of one model",
    details: `
      The whole model as one document read at one store revision: applications, units, machines,
      integrations and their data, leadership and leader data, status, ports, actions, access, the
      agents' credential hashes and the operators its applications use. A sealed cloud credential is
      named, never written: add it to the controller you import into first. The file is gzipped JSON.
      Needs admin access to the model.

      A model that holds secrets is exported only with a passphrase (\`--passphrase-env VAR\`,
      \`--passphrase-file FILE\` or \`--passphrase\` to be asked): their values are written sealed to
      it (scrypt, AES-256-GCM), never in the clear, and import-model asks for it. Without one, the
      export of such a model is refused.
    `,
    examples: [
      ["Export model demo", "$0 export-model demo -o demo.steward.gz"],
      [
        "A model with secrets, the passphrase in $EXPORT_PASSPHRASE",
        "$0 export-model demo -o demo.steward.gz --passphrase-env EXPORT_PASSPHRASE",
      ],
      [
        "For a controller of the previous release (reads format 2)",
        "$0 export-model demo -o demo.steward.gz --format-version 2",
      ],
    ],
  });

  name = Option.String({ required: true, name: "model" });
  output = Option.String("-o,--output", { required: true, description: "File to write (gzipped JSON)" });
  formatVersion = Option.String("--format-version", {
    description:
      "Write the newest export format the importing controller reads, when it is older than this one (2: the release before model placements)",
    validator: isWholeNumber(1),
  });

  passphraseEnv = passphraseOptions("export").passphraseEnv;
  passphraseFile = passphraseOptions("export").passphraseFile;
  askPassphrase = Option.Boolean("--passphrase", false, {
    description: "Ask for the passphrase the model's secret values are sealed to",
  });

  async run(): Promise<number> {
    const sealed = this.askPassphrase || this.passphraseEnv !== undefined || this.passphraseFile !== undefined;
    const passphrase = sealed ? await readPassphrase(this.context, this, true, "export") : undefined;
    const client = await this.connect();
    const started = Date.now();
    const doc =
      passphrase === undefined
        ? await client.call(
            routes.exportModel,
            { model: this.name },
            undefined,
            this.formatVersion === undefined ? {} : { version: this.formatVersion },
          )
        : await client.call(
            routes.exportModelSealed,
            { model: this.name },
            { passphrase, ...(this.formatVersion === undefined ? {} : { version: Number(this.formatVersion) }) },
          );
    const json = JSON.stringify(doc);
    const gz = gzipSync(json);
    await writeFile(resolve(this.context.cwd, this.output), gz, { mode: 0o600 });
    const units = Object.keys(doc.documents.unit ?? {}).length;
    this.out(
      `Model "${this.name}" exported to ${this.output}: format version ${doc.version}, store revision ${doc.source.revision}, ${units} units, ${gz.length} bytes (${json.length} as JSON) in ${Date.now() - started} ms.`,
    );
    return 0;
  }
}
