import { Command, Option, UsageError } from "clipanion";
import * as t from "typanion";
import type { RevealedSecret, SecretInfo } from "../../api/core";
import { ModelCommand } from "../base-command";
import { secretDocument } from "../secret-format";
import { secretRef } from "../secret-values";
import { stringify } from "../yaml-output";

export default class ShowSecretCommand extends ModelCommand {
  static override paths = [["show-secret"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "show a secret's metadata, and with --reveal its values",
    details: `
      Its owner, revisions (when each was made and expires, which units track it), rotation and who may
      read it. \`--reveal\` adds the values of the latest revision (or \`--revision N\`'s), for the user
      who made the secret or a controller superuser only; others are refused. Revealed values are
      printed as they are: mind your terminal's scrollback.
    `,
    examples: [
      ["Show api-token", "$0 show-secret api-token"],
      ["With its values", "$0 show-secret api-token --reveal"],
      [
        "Revision 1's values, as JSON",
        "$0 show-secret secret:cs4lbs1fs1n3m4hiuhpg --reveal --revision 1 --format json",
      ],
    ],
  });

  secret = Option.String({ required: true, name: "name|uri" });
  reveal = Option.Boolean("--reveal", false, { description: "Show its values too (its creator or a superuser)" });
  revision = Option.String("--revision", {
    description: "The revision to show (default: all, and the latest's values)",
    validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(1)),
  });
  format = Option.String("--format", "yaml", { description: "yaml or json" });

  async run(): Promise<number> {
    if (this.format !== "yaml" && this.format !== "json")
      throw new UsageError(`--format must be yaml or json, got "${this.format}"`);
    const ref = secretRef(this.secret);
    const client = await this.connect();
    const model = await this.model();
    const info: SecretInfo | RevealedSecret = this.reveal
      ? await client.revealSecret(model, ref, this.revision)
      : await client.showSecret(model, ref);
    if (this.revision !== undefined && !info.revisions.some((r) => r.revision === this.revision))
      throw new UsageError(
        `${ref} has no revision ${this.revision} (it has ${info.revisions.map((r) => r.revision).join(", ") || "none"})`,
      );
    const shown =
      this.revision !== undefined
        ? { ...info, revisions: info.revisions.filter((r) => r.revision === this.revision) }
        : info;
    const doc: Record<string, unknown> = secretDocument(shown);
    const content = (info as Partial<RevealedSecret>).content;
    if (content) doc.content = { revision: content.revision, values: content.values };
    // Revealed values are written as they are (not sanitised): they are what the user asked to see.
    this.context.stdout.write(this.format === "json" ? JSON.stringify(doc, null, 2) + "\n" : stringify(doc));
    return 0;
  }
}
