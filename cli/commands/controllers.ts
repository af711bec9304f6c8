import { Command, Option } from "clipanion";
import { ControllerClient, routes } from "../../api/core";
import { BaseCommand } from "../base-command";
import { table } from "../../api/core";

export default class ControllersCommand extends BaseCommand {
  static override paths = [["controllers"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "list the controllers this client knows",
    details:
      "Shows each controller with its addresses, user and whether it answers now. The current controller is marked with `*`.",
    examples: [
      ["List controllers", "$0 controllers"],
      ["As JSON", "$0 controllers --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const cfg = await this.clientConfig();
    const rows = await Promise.all(
      Object.entries(cfg.controllers).map(async ([name, e]) => {
        const client = new ControllerClient({ addresses: e.addresses, caCert: e.caCert, timeoutMs: 2000 });
        const up = await client.call(routes.health, {}).then(
          () => "yes",
          () => "no",
        );
        client.close();
        return {
          name,
          current: cfg.current === name,
          addresses: e.addresses,
          user: e.user,
          model: e.currentModel ?? "",
          reachable: up === "yes",
        };
      }),
    );
    if (this.format === "json") {
      this.out(JSON.stringify(rows, null, 2));
      return 0;
    }
    if (rows.length === 0) {
      this.out("No controllers. Create one with: steward bootstrap");
      return 0;
    }
    this.context.stdout.write(
      table(
        ["Controller", "Model", "User", "Addresses", "Reachable"],
        rows.map((r) => [
          `${r.name}${r.current ? "*" : ""}`,
          r.model,
          r.user,
          r.addresses.join(","),
          r.reachable ? "yes" : "no",
        ]),
      ),
    );
    return 0;
  }
}
