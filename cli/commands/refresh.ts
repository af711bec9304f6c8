import { Command, Option, UsageError } from "clipanion";
import { resolve } from "node:path";
import { changeOf, readOperatorDir, shortHash, waitForModelReady } from "../../api/core";
import { ModelCommand } from "../base-command";
import { DURATION_HELP, isDuration } from "../validators";

export default class RefreshCommand extends ModelCommand {
  static override paths = [["refresh"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "upgrade an application to new content of its operator",
    details: `
      Reads the operator directory again (\`--path\`, or the one the application was deployed from
      with \`steward deploy\` on this client), uploads it if the controller does not have this
      content yet, and upgrades the application: each unit runs \`upgrade\` then \`config-changed\`.
      The operator must keep its name; config the new version drops is removed with the upgrade.
    `,
    examples: [
      ["Upgrade web from the directory it was deployed from", "$0 refresh web"],
      ["Upgrade web from another directory and wait", "$0 refresh web --path ./operators/hello-http --wait"],
    ],
  });

  app = Option.String({ required: true, name: "application" });
  sourceDir = Option.String("--path", {
    description: "Operator directory (default: the one it was deployed from, if this client deployed it)",
  });
  wait = Option.Boolean("--wait", false, {
    description: "Wait until every unit has run the upgrade and is active/idle",
  });
  timeout = Option.String("--timeout", "10m", {
    description: "How long --wait waits: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    const model = await this.model();
    const { entry } = await this.resolveController();
    const known = entry.operatorSources?.[`${model}/${this.app}`];
    const dir = this.sourceDir !== undefined ? resolve(this.context.cwd, this.sourceDir) : known;
    if (!dir)
      throw new UsageError(
        `this client does not know where "${this.app}"'s operator came from: give its directory with --path DIR`,
      );
    const op = await readOperatorDir(dir);
    const client = await this.connect();
    const app = await client.getApplication(model, this.app);
    if (op.meta.name !== app.operator.name) {
      throw new UsageError(
        `${dir} holds operator "${op.meta.name}", but "${this.app}" runs "${app.operator.name}": refresh keeps the operator; deploy another application to change it`,
      );
    }
    if (op.hash === app.operator.hash) {
      this.out(
        `"${this.app}" already runs this content of ${op.meta.name} ${op.meta.version} (${shortHash(op.hash)}); nothing to do.`,
      );
      return 0;
    }
    if (!(await client.hasOperator(op.hash))) {
      this.progress(`Uploading operator ${op.meta.name} ${op.meta.version} (${op.bundle.files.length} files)`);
      await client.uploadOperator(op.bundle);
    }
    const updated = await client.updateApplication(model, this.app, { operator: op.hash });
    if (this.sourceDir !== undefined) await this.rememberOperatorSource(model, this.app, dir);
    this.out(
      `Upgrading "${this.app}" from ${app.operator.name} ${app.operator.version} (${shortHash(app.operator.hash)}) to ${op.meta.version} (${shortHash(op.hash)}).`,
    );
    if (this.wait) {
      // Until every unit has run upgrade (and config-changed) for this content, not only active/idle.
      await waitForModelReady(client, model, {
        apps: [this.app],
        changed: { [this.app]: changeOf(updated) },
        timeoutMs: this.timeout,
        progress: (l) => this.progress(l),
      });
      this.out(`All units of "${this.app}" run the new content and are active.`);
    }
    return 0;
  }
}
