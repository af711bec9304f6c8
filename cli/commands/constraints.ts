import { Command, Option, UsageError } from "clipanion";
import { ModelCommand } from "../base-command";
import { constraintsArgument } from "../cloud-options";

export default class ConstraintsCommand extends ModelCommand {
  static override paths = [["constraints"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "show or set an application's constraints",
    details: `
      An application's constraints (Juju's syntax: cores, mem, root-disk, arch, instance-type) are
      merged over the model's for the machines made for its units in aws and vsphere models. Setting
      them replaces the application's constraints and applies to machines made from now on; machines
      that exist keep what they were made with (as in Juju).
    `,
    examples: [
      ["Show them", "$0 constraints web"],
      ["Machines with 4 cores and 8 GiB for new units", "$0 constraints web cores=4 mem=8G"],
      ["Back to the model's", "$0 constraints web --clear"],
    ],
  });

  app = Option.String({ required: true, name: "application" });
  pairs = Option.Rest({ name: "key=value" });
  clear = Option.Boolean("--clear", false, { description: "Remove the application's constraints" });

  async run(): Promise<number> {
    if (this.clear && this.pairs.length > 0) throw new UsageError("give constraints or --clear, not both");
    const set = this.clear ? "" : constraintsArgument(this.pairs);
    const client = await this.connect();
    const model = await this.model();
    const app =
      set === undefined
        ? await client.getApplication(model, this.app)
        : await client.updateApplication(model, this.app, { constraints: set });
    this.out(app.constraints ?? "(none: the model's apply)");
    return 0;
  }
}
