import { Command, Option } from "clipanion";
import type { StewardContext } from "../context";

export default class HelpCommand extends Command<StewardContext> {
  static override paths = [["help"]];
  static override usage = Command.Usage({
    category: "Getting started",
    description: "list the commands, or show one command's help",
    examples: [
      ["Every command", "$0 help"],
      ["How to use deploy", "$0 help deploy"],
    ],
  });

  command = Option.Rest({ name: "command" });

  async execute(): Promise<number> {
    if (this.command.length === 0) {
      this.context.stdout.write(this.cli.usage(null));
      return 0;
    }
    // The same text as `steward <command> --help`, including for unknown names (a usage error).
    return this.cli.run([...this.command, "--help"]);
  }
}
