import { Command, Option, UsageError } from "clipanion";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ControllerClient, Name } from "../../api";
import { initControllerDir } from "../../controller";
import { BaseCommand } from "../base-command";
import { freePort, portFree, startLocalController } from "../local-controller";

export default class BootstrapCommand extends BaseCommand {
  static override paths = [["bootstrap"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "create a controller on this host",
    details: `
      Creates a single-replica controller on this machine, using the embedded store (no database to
      install): generates its certificate authority and admin credentials, starts it in the
      background and makes it the current controller. Machines added to its models with the local
      substrate run as agent processes on this host.

      The admin password is stored, with the controller's CA, in \`$STEWARD_HOME/controllers.json\`
      (mode 0600). The controller listens on 127.0.0.1:17070, or on a free port if that is taken.
    `,
    examples: [
      ["Bootstrap a controller called local", "$0 bootstrap"],
      ["Bootstrap a second controller on a chosen port", "$0 bootstrap dev --port 17171"],
    ],
  });

  name = Option.String({ required: false, name: "name" });
  port = Option.String("--port", { description: "API port (default 17070, or a free port if that is taken)" });
  host = Option.String("--host", "127.0.0.1", { description: "Address to listen on" });

  async run(): Promise<number> {
    const name = this.name ?? "local";
    if (!Name.safeParse(name).success) throw new UsageError(`controller name "${name}" must be lower-case letters, digits and hyphens`);
    const cfg = await this.clientConfig();
    if (cfg.controllers[name]) throw new UsageError(`controller "${name}" already exists: use it (steward status -c ${name}) or remove it first (steward destroy-controller ${name} --yes)`);
    let port: number;
    if (this.port !== undefined) {
      port = Number(this.port);
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--port must be a number from 1 to 65535, got "${this.port}"`);
      if (!(await portFree(this.host, port))) throw new UsageError(`port ${port} on ${this.host} is in use; choose another with --port`);
    } else {
      port = (await portFree(this.host, 17070)) ? 17070 : await freePort(this.host);
    }
    const dataDir = join(this.home, "controllers", name);
    this.progress(`Creating controller "${name}" in ${dataDir}`);
    const init = await initControllerDir({ dataDir, name, listen: { host: this.host, port } });
    if (!init.created || !init.adminPassword) throw new UsageError(`${dataDir} already holds a controller that this client does not know; remove that directory or choose another name`);
    this.progress("Starting the controller (embedded store)");
    let addresses: string[];
    try {
      addresses = await startLocalController(dataDir, init.caCert);
    } catch (err) {
      await rm(dataDir, { recursive: true, force: true });
      throw err;
    }
    const client = new ControllerClient({ addresses, caCert: init.caCert, user: "admin", password: init.adminPassword });
    const token = await client.login();
    client.close();
    cfg.controllers[name] = { addresses, caCert: init.caCert, user: "admin", password: init.adminPassword, token, dataDir };
    cfg.current = name;
    await this.saveConfig(cfg);
    this.out(`Bootstrapped controller "${name}" at ${addresses.join(", ")}.`);
    this.out(`Admin credentials are in ${join(this.home, "controllers.json")}. Next: steward add-model <name>`);
    return 0;
  }
}
