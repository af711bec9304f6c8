import { Command, Option } from "clipanion";
import * as t from "typanion";
import { ModelCommand } from "../base-command";
import { secretRef } from "../secret-values";

export default class RemoveSecretCommand extends ModelCommand {
  static override paths = [["remove-secret"]];
  static override usage = Command.Usage({
    category: "Secrets",
    description: "remove a user secret, or one of its revisions",
    details:
      "Units that read it then fail their `secret-get`. With `--revision N` only that revision goes (not the latest). Operators' own secrets are removed by their operators (`secret-remove`).",
    examples: [
      ["Remove api-token", "$0 remove-secret api-token"],
      ["Remove its revision 1 only", "$0 remove-secret api-token --revision 1"],
    ],
  });

  secret = Option.String({ required: true, name: "name|uri" });
  revision = Option.String("--revision", {
    description: "Remove only this revision",
    validator: t.cascade(t.isNumber(), t.isInteger(), t.isAtLeast(1)),
  });

  async run(): Promise<number> {
    const ref = secretRef(this.secret);
    await (await this.connect()).removeSecret(await this.model(), ref, this.revision);
    this.out(this.revision !== undefined ? `Removed revision ${this.revision} of ${ref}.` : `Removed secret ${ref}.`);
    return 0;
  }
}
