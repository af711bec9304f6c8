import { Command, Option } from "clipanion";
import { ModelCommand } from "../base-command";
import { parsePoolAttributes } from "../../api/core";

export default class CreateStoragePoolCommand extends ModelCommand {
  static override paths = [["create-storage-pool"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "make a storage pool of the model from one of its substrate's pool types",
    details: `
      A pool is a type (one of the model's substrate's built-in pools: \`steward storage-pools\`) with attributes that type takes, such as a \`local\` pool's \`location\`. Deploy with it by name: \`deploy --storage data=NAME,1G\`. Making the same pool again changes nothing; another pool of that name is refused. Needs admin access to the model.
    `,
    examples: [
      ["A local pool whose instances live under /srv/fast", "$0 create-storage-pool fast local location=/srv/fast"],
      ["Then deploy with it", "$0 deploy ./operators/notebook --storage data=fast,1G"],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  type = Option.String({ required: true, name: "type" });
  attributes = Option.Rest({ name: "key=value" });

  async run(): Promise<number> {
    const attributes = parsePoolAttributes(this.attributes);
    const client = await this.connect();
    const pool = await client.createStoragePool(await this.model(), this.name, this.type, attributes);
    const attrs = Object.entries(pool.attributes).map(([k, v]) => `${k}=${v}`);
    this.out(`Storage pool ${pool.name} (type ${pool.type}${attrs.length ? `, ${attrs.join(" ")}` : ""}).`);
    return 0;
  }
}
