import { Command } from "clipanion";
import { routes, table } from "../../api/core";
import { ControllerCommand } from "../base-command";

export default class BackupsCommand extends ControllerCommand {
  static override paths = [["backups"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "list the backups kept on the controller",
    details: "Oldest first, as the quota removes them. Download one with `steward download-backup ID`. Superuser only.",
    examples: [["List backups", "$0 backups"]],
  });

  async run(): Promise<number> {
    const client = await this.connect();
    const { backups } = await client.call(routes.listBackups, {});
    if (backups.length === 0) {
      this.out("No backups kept (steward create-backup makes one).");
      return 0;
    }
    this.context.stdout.write(
      table(
        ["ID", "Created", "Revision", "Models", "Keys", "Size"],
        backups.map((b) => [
          b.id,
          b.createdAt,
          String(b.revision),
          String(b.models),
          String(b.keys),
          `${(b.bytes / 1024).toFixed(0)} KiB`,
        ]),
      ),
    );
    return 0;
  }
}
