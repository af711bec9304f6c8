import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { checkUnitName } from "../validators";

export default class ResolveCommand extends ModelCommand {
  static override paths = [["resolve"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "retry (or skip) the failed hook of a unit in error",
    details:
      "Runs the failed hook again now, without waiting for the automatic retry. With `--no-retry`, the hook counts as done without running again (use when you fixed things by hand).",
    examples: [
      ["Retry now", "$0 resolve web/0"],
      ["Skip the failed hook", "$0 resolve web/0 --no-retry"],
    ],
  });

  unit = Option.String({ required: true, name: "unit" });
  noRetry = Option.Boolean("--no-retry", false, { description: "Mark the failed hook done without running it" });

  async run(): Promise<number> {
    checkUnitName(this.unit);
    const client = await this.connect();
    await client.resolve(await this.model(), this.unit, !this.noRetry);
    this.out(
      this.noRetry ? `${this.unit}: the failed hook is marked done.` : `${this.unit}: retrying the failed hook.`,
    );
    return 0;
  }
}
