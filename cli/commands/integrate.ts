import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";

export default class IntegrateCommand extends ModelCommand {
  static override paths = [["integrate"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "integrate two applications",
    details: `
      Joins an endpoint one application provides with one the other requires, matched by interface.
      Name the endpoints (\`app:endpoint\`) when more than one pair fits; the error lists the
      candidates. Units of both sides then run relation-created, relation-joined and
      relation-changed and can exchange data with relation-get and relation-set.
    `,
    examples: [
      ["Integrate a checker with a web server", "$0 integrate checker web"],
      ["Name the endpoints", "$0 integrate checker:upstream web:website"],
    ],
  });

  a = Option.String({ required: true, name: "app[:endpoint]" });
  b = Option.String({ required: true, name: "app[:endpoint]" });

  async run(): Promise<number> {
    const client = await this.connect();
    const r = await client.integrate(await this.model(), this.a, this.b);
    this.out(`Integrated ${r.key} (integration ${r.id}).`);
    return 0;
  }
}
