import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { gunzipSync } from "node:zlib";
import { Command, Option, UsageError } from "clipanion";
import { ControllerCommand } from "../base-command";
import { routes } from "../../api/core";
import { passphraseOptions, readPassphrase } from "../read-passphrase";

/** The controller takes at most this much JSON (MAX_MODEL_EXPORT_BYTES): refuse sooner, and do not inflate a gzip bomb past it. */
const MAX_JSON_BYTES = 64 * 1024 * 1024;

export default class ImportModelCommand extends ControllerCommand {
  static override paths = [["import-model"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "create a model from a file written by export-model",
    details: `
      Writes the model into this controller in one transaction: nothing is created when anything is
      refused. The model keeps its uuid, so it cannot be imported again where it exists; \`--name\`
      gives it another name, and where the original is, a copy: a new uuid, and machines that
      get agents of their own (the original's agents' credentials do not open it). Its machines'
      agents, pointed at this controller, log in with the credentials they have and carry on where
      they were: no hook runs again. Access of users this controller does not have is dropped (the
      answer names them). An older file format is upgraded on the way in. Needs a superuser.
      An export whose secrets are sealed to a passphrase needs it (\`--passphrase-env VAR\`,
      \`--passphrase-file FILE\`, or asked): a wrong one is refused and nothing is imported.
    `,
    examples: [
      ["Import a model", "$0 import-model demo.steward.gz"],
      ["Under another name", "$0 import-model demo.steward.gz --name demo-copy"],
    ],
  });

  file = Option.String({ required: true, name: "file" });
  name = Option.String("--name", { description: "Name the model this instead of its exported name" });
  passphraseEnv = passphraseOptions("export").passphraseEnv;
  passphraseFile = passphraseOptions("export").passphraseFile;

  async run(): Promise<number> {
    const bytes = await readFile(resolve(this.context.cwd, this.file));
    let text: string;
    try {
      // gzip starts with 1f 8b; a plain JSON export is taken too.
      text =
        bytes[0] === 0x1f && bytes[1] === 0x8b
          ? gunzipSync(bytes, { maxOutputLength: MAX_JSON_BYTES }).toString("utf8")
          : bytes.toString("utf8");
    } catch (err) {
      throw new UsageError(`${this.file} is not a model export: ${(err as Error).message}`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${this.file} is not a model export: ${(err as Error).message}`);
    }
    // Secret values sealed to a passphrase (export-model --passphrase…): the controller opens them with it.
    const sealing = (doc as { secrets?: { sealing?: { kind?: string } } } | null)?.secrets?.sealing;
    const body =
      sealing?.kind === "passphrase"
        ? { passphrase: await readPassphrase(this.context, this, false, "export"), export: doc }
        : doc;
    const client = await this.connect();
    const res = await client.call(routes.importModel, {}, body, { name: this.name || undefined });
    const count = Object.values(res.documents).reduce((a, b) => a + b, 0);
    this.out(
      `Model "${res.name}" (${res.uuid}) imported: ${count} documents, ${res.documents.unit ?? 0} units${res.fromVersion < 2 ? ` (upgraded from format version ${res.fromVersion})` : ""}.`,
    );
    if (res.copyOf)
      this.out(`It is a copy of model ${res.copyOf} here, with its own uuid: its machines get new agents.`);
    if (res.missingUsers.length > 0)
      this.out(
        `Access not imported for users this controller does not have: ${res.missingUsers.join(", ")} (add them with steward add-user, then steward grant).`,
      );
    return 0;
  }
}
