import { resolve } from "node:path";
import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { defaultBackupFile, downloadBackup } from "../backup-download";

export default class DownloadBackupCommand extends ControllerCommand {
  static override paths = [["download-backup"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "download a backup kept on the controller",
    details: "Writes the encrypted file (checked against the SHA-256 recorded when it was made). Superuser only.",
    examples: [["Download a backup", "$0 download-backup 20261125T001500Z-a1b2c3 -o local.sbk"]],
  });

  id = Option.String({ required: true, name: "id" });
  output = Option.String("-o,--output", { description: "File to write (default steward-backup-CONTROLLER-ID.sbk)" });

  async run(): Promise<number> {
    const client = await this.connect();
    const { name } = await this.resolveController();
    const file = this.output ?? defaultBackupFile(name, this.id);
    const r = await downloadBackup(client, this.id, resolve(this.context.cwd, file));
    this.out(`Backup ${r.id} (store revision ${r.revision}, ${r.bytes} bytes) written to ${file}.`);
    return 0;
  }
}
