import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { routes } from "../../api/core";

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
    `,
    examples: [["Export model demo", "$0 export-model demo -o demo.steward.gz"]],
  });

  name = Option.String({ required: true, name: "model" });
  output = Option.String("-o,--output", { required: true, description: "File to write (gzipped JSON)" });

  async run(): Promise<number> {
    const client = await this.connect();
    const started = Date.now();
    const doc = await client.call(routes.exportModel, { model: this.name });
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
