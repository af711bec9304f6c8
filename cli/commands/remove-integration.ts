import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class RemoveIntegrationCommand extends ModelCommand {
  static override paths = [["remove-integration"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "end an integration between two applications",
    details:
      "Units on both sides run relation-departed for each remote unit, then relation-broken; then the integration and its data are gone.",
    examples: [["End the integration of checker and web", "$0 remove-integration checker web"]],
  });

  a = Option.String({ required: true, name: "app[:endpoint]" });
  b = Option.String({ required: true, name: "app[:endpoint]" });

  async run(): Promise<number> {
    const client = await this.connect();
    await client.removeIntegration(await this.model(), this.a, this.b);
    this.out(`Removing the integration of ${this.a} and ${this.b}.`);
    return 0;
  }
}
