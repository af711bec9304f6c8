import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { table } from "../../api/core";

export default class MachinesCommand extends ModelCommand {
  static override paths = [["machines"]];
  static override usage = Command.Usage({
    category: "Machines",
    description: "list the model's machines",
    examples: [
      ["List machines", "$0 machines"],
      ["As JSON", "$0 machines --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const client = await this.connect();
    const machines = await client.listMachines(await this.model());
    if (this.format === "json") {
      this.out(JSON.stringify(machines, null, 2));
      return 0;
    }
    if (machines.length === 0) {
      this.out("No machines.");
      return 0;
    }
    const instance = (m: (typeof machines)[number]): string =>
      m.instance ? `${m.instance.id} (${m.instance.state}${m.instance.zone ? `, ${m.instance.zone}` : ""})` : "";
    // Hardware where the cloud said what it is, else what was asked for.
    const size = (m: (typeof machines)[number]): string =>
      m.hardware ?? (m.constraints ? `asked: ${m.constraints}` : "");
    this.context.stdout.write(
      table(
        ["Machine", "State", "Address", "Hostname", "Substrate", "Instance", "Hardware", "Units"],
        machines.map((m) => [
          m.id,
          m.life === "dying" ? "removing" : m.status,
          m.address,
          m.hostname,
          m.substrate,
          instance(m),
          size(m),
          m.units.join(","),
        ]),
      ),
    );
    return 0;
  }
}
