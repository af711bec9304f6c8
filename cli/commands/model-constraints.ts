import { Command, Option, UsageError } from "clipanion";
import { StewardError } from "../../api/core";
import { ModelCommand } from "../base-command";
import { constraintsArgument } from "../cloud-options";

export default class ModelConstraintsCommand extends ModelCommand {
  static override paths = [["model-constraints"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show or set the model's constraints",
    details: `
      The default constraints (Juju's syntax: cores, mem, root-disk, arch, instance-type) of the
      machines an aws or vsphere model makes; an application's and a machine's own are merged over
      them. Setting them replaces the model's constraints and applies to machines made from now on;
      machines that exist keep what they were made with (as in Juju).
    `,
    examples: [
      ["Show them", "$0 model-constraints"],
      ["At least 2 cores and 4 GiB for new machines", "$0 model-constraints cores=2 mem=4G"],
      ["None", "$0 model-constraints --clear"],
    ],
  });

  pairs = Option.Rest({ name: "key=value" });
  clear = Option.Boolean("--clear", false, { description: "Remove the model's constraints" });

  async run(): Promise<number> {
    if (this.clear && this.pairs.length > 0) throw new UsageError("give constraints or --clear, not both");
    const set = this.clear ? "" : constraintsArgument(this.pairs);
    const client = await this.connect();
    const model = await this.model();
    let shown: string | undefined;
    if (set !== undefined) shown = (await client.setModelConstraints(model, set)).constraints;
    else {
      const m = (await client.listModels()).find((x) => x.name === model);
      if (!m)
        throw new StewardError("not-found", `model "${model}" not found (steward models lists the models you can see)`);
      shown = m.constraints;
    }
    this.out(shown ?? "(none)");
    return 0;
  }
}
