import { Command, Option } from "clipanion";
import { resolve } from "node:path";
import {
  coerceConfigText,
  formatLeaseSeconds,
  parseStorageArg,
  readOperatorDir,
  waitForModelReady,
} from "../../api/core";
import { ModelCommand, parseAssignments } from "../base-command";
import { withConstraintsFlag } from "../cloud-options";
import { DURATION_HELP, isDuration, isLeadershipLease, isWholeNumber } from "../validators";

export default class DeployCommand extends withConstraintsFlag(ModelCommand) {
  static override paths = [["deploy"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "deploy an operator as a new application",
    details: `
      Checks the operator directory (operator.yaml and hooks/), uploads it if the controller does not
      have this content yet, and creates the application with its units. Each unit gets a new
      machine unless \`--to\` names existing ones. Config values are converted to the option types
      declared in operator.yaml (\`port=80\` becomes the number 80).

      In an aws or vsphere model, \`--constraints\` (Juju's syntax) say what the machines made for
      its units must have, merged over the model's constraints.

      \`--leadership-lease\` gives its units a leadership lease of their own (5s to 1h; the
      controller's is 60s): a leader whose agent dies is replaced about one lease later, and a leader
      keeps leadership for half the lease after each renewal. A database primary wants it short.
      Change it later with \`steward leadership-lease\`.
    `,
    examples: [
      ["Deploy hello-http with two units", "$0 deploy ./operators/hello-http -n 2"],
      [
        "Deploy under another name with config",
        "$0 deploy ./operators/motd banner --config message='Maintenance at 6pm'",
      ],
      [
        "Two units on machines with 4 cores and 8 GiB each (aws, vsphere)",
        '$0 deploy ./operators/hello-http -n 2 --constraints "cores=4 mem=8G"',
      ],
      [
        "Place units on machines 0 and 1 and wait until active",
        "$0 deploy ./operators/hello-http -n 2 --to 0,1 --wait",
      ],
      [
        "Give each unit two 1 GiB stores of its operator's data storage",
        "$0 deploy ./operators/notebook --storage data=local,1G,2",
      ],
      [
        "Three database units whose leader fails over after about 10 seconds",
        "$0 deploy ./operators/postgresql -n 3 --leadership-lease 10s",
      ],
    ],
  });

  dir = Option.String({ required: true, name: "operator-dir" });
  appName = Option.String({ required: false, name: "application" });
  units = Option.String("-n,--num-units", "1", { description: "How many units", validator: isWholeNumber(0) });
  config = Option.Array("--config", [], { description: "Config as key=value (repeatable)" });
  to = Option.String("--to", { description: "Comma-separated machine ids, one per unit" });
  storage = Option.Array("--storage", [], {
    description: "Storage as name=pool,size,count, any part optional (e.g. data=local,1G,2; repeatable)",
  });
  leadershipLease = Option.String("--leadership-lease", {
    description: "The units' leadership lease: a duration from 5s to 1h (default: the controller's, 60s)",
    validator: isLeadershipLease(),
  });
  wait = Option.Boolean("--wait", false, { description: "Wait until every unit is active/idle" });
  timeout = Option.String("--timeout", "10m", {
    description: "How long --wait waits: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    const units = this.units;
    const constraints = this.constraintsText();
    const model = await this.model();
    const dir = resolve(this.context.cwd, this.dir);
    const op = await readOperatorDir(dir);
    const name = this.appName ?? op.meta.name;
    const config = Object.fromEntries(
      Object.entries(parseAssignments(this.config, "--config")).map(([k, v]) => [
        k,
        coerceConfigText(op.meta.config[k]?.type, v),
      ]),
    );
    const storage = Object.fromEntries(this.storage.map(parseStorageArg).map((s) => [s.name, s.request]));
    const client = await this.connect();
    if (!(await client.hasOperator(op.hash))) {
      this.progress(`Uploading operator ${op.meta.name} ${op.meta.version} (${op.bundle.files.length} files)`);
      await client.uploadOperator(op.bundle);
    }
    const to = this.to
      ? this.to
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined;
    const app = await client.deploy(model, {
      name,
      operator: op.hash,
      units,
      ...(Object.keys(config).length > 0 ? { config } : {}),
      ...(to ? { to } : {}),
      ...(constraints ? { constraints } : {}),
      ...(Object.keys(storage).length > 0 ? { storage } : {}),
      ...(this.leadershipLease !== undefined ? { leadershipLease: this.leadershipLease } : {}),
    });
    await this.rememberOperatorSource(model, name, dir);
    this.out(
      `Deployed "${name}" (${op.meta.name} ${op.meta.version}) with ${app.units.length} unit${app.units.length === 1 ? "" : "s"}: ${app.units.join(", ") || "none"}${app.constraints ? ` (constraints ${app.constraints})` : ""}${app.leadershipLeaseSeconds !== undefined ? ` (leadership lease ${formatLeaseSeconds(app.leadershipLeaseSeconds)})` : ""}.`,
    );
    if (this.wait) {
      await waitForModelReady(client, model, {
        apps: [name],
        timeoutMs: this.timeout,
        progress: (l) => this.progress(l),
      });
      this.out(`All units of "${name}" are active.`);
    } else {
      this.out("Follow progress with: steward status --watch");
    }
    return 0;
  }
}
