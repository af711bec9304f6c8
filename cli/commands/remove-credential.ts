import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class RemoveCredentialCommand extends ControllerCommand {
  static override paths = [["remove-credential"]];
  static override usage = Command.Usage({
    category: "Credentials",
    description: "remove a stored credential",
    details: "Refused while a model made with it exists: destroy the model first.",
    examples: [["Remove a credential", "$0 remove-credential prod"]],
  });

  name = Option.String({ required: true, name: "name" });

  async run(): Promise<number> {
    await (await this.connect()).removeCredential(this.name);
    this.out(`Credential "${this.name}" removed.`);
    return 0;
  }
}
