import { resolve } from "node:path";
import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { defaultBackupFile, downloadBackup } from "../backup-download";
import { passphraseOptions, readPassphrase } from "../read-passphrase";
import { routes } from "../../api/core";

export default class CreateBackupCommand extends ControllerCommand {
  static override paths = [["create-backup"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "back up the whole controller, encrypted with a passphrase",
    details: `
      The controller reads its whole store at one revision (every model, user, operator and cloud
      credential, still sealed) with its CA certificate and key, encrypts it with the passphrase
      (scrypt, AES-256-GCM), opens it again to check it, and keeps it (\`steward backups\`; the oldest
      are removed past the controller's quota). Then it is downloaded to \`-o FILE\` (default
      steward-backup-CONTROLLER-ID.sbk here), unless \`--no-download\`. Restore with
      \`steward restore-backup FILE\`. Keep the passphrase: without it the file opens for nobody.
      The passphrase comes from \`--passphrase-env VAR\`, \`--passphrase-file FILE\` or a prompt.
      Superuser only.
    `,
    examples: [
      ["Back up, asking for the passphrase", "$0 create-backup"],
      [
        "Back up with the passphrase in $BACKUP_PASSPHRASE, to a file",
        "$0 create-backup --passphrase-env BACKUP_PASSPHRASE -o local.sbk",
      ],
    ],
  });

  output = Option.String("-o,--output", { description: "File to download the backup to" });
  noDownload = Option.Boolean("--no-download", false, { description: "Keep the backup on the controller only" });
  passphraseEnv = passphraseOptions().passphraseEnv;
  passphraseFile = passphraseOptions().passphraseFile;

  async run(): Promise<number> {
    const passphrase = await readPassphrase(this.context, this, true);
    const client = await this.connect();
    const { name } = await this.resolveController();
    const made = await client.call(routes.createBackup, {}, { passphrase });
    const r = made.record;
    this.out(
      `Backup ${r.id} made: store revision ${r.revision}, ${r.keys} keys, ${r.models} models, ${r.bytes} bytes (read ${made.timings.snapshotMs} ms, encrypted ${made.timings.encryptMs} ms).`,
    );
    if (this.noDownload) return 0;
    const file = this.output ?? defaultBackupFile(name, r.id);
    await downloadBackup(client, r.id, resolve(this.context.cwd, file));
    this.out(`Downloaded to ${file}.`);
    return 0;
  }
}
