import { Command, Option, UsageError } from "clipanion";
import { stringify } from "../yaml-output";
import type { ControllerClient, ModelStatus, StatusFilter } from "../../api/core";
import { colourWanted } from "../colour";
import { ModelCommand } from "../base-command";
import { formatStatusTabular } from "../status-format";

export default class StatusCommand extends ModelCommand {
  static override paths = [["status"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show the status of a model",
    details: `
      Shows applications, units (workload and agent status, as \`juju status\` does), machines and
      integrations. A unit reads as \`workload/agent\`: \`active/idle\` is ready. \`--watch\` keeps the
      view up to date as things change (Ctrl-C to stop).

      Filters narrow what is shown (the controller sends only that): an application name shows it
      with its units, a unit name (\`web/0\`) that unit, a machine number the units on it; each with
      the machines and integrations involved. Several filters show everything any of them selects,
      with \`--watch\` too.

      On a terminal statuses are coloured as \`juju status\` colours them (set \`NO_COLOR\` for none,
      \`FORCE_COLOR=1\` for colour through a pipe). Rev is the application's operator revision: 1 at
      deploy, one more on each refresh that changes the operator.
    `,
    examples: [
      ["Status of the current model", "$0 status"],
      ["One application", "$0 status web"],
      ["One unit, and machine 3", "$0 status web/0 3"],
      ["As YAML", "$0 status --format yaml"],
      ["Follow changes", "$0 status --watch"],
      ["Follow one application", "$0 status web --watch"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular, json or yaml" });
  watch = Option.Boolean("--watch", false, { description: "Keep showing status as it changes" });
  filters = Option.Rest({ name: "application|unit|machine" });

  async run(): Promise<number> {
    if (!["tabular", "json", "yaml"].includes(this.format))
      throw new UsageError(`--format must be tabular, json or yaml, got "${this.format}"`);
    const filter = statusFilterOf(this.filters);
    const client = await this.connect();
    const model = await this.model();
    if (!this.watch) {
      this.render(await client.status(model, filter));
      return 0;
    }
    // A filter naming something that does not exist is refused before the watch starts.
    if (this.filters.length > 0) await client.status(model, filter);
    const abort = new AbortController();
    const onInt = (): void => abort.abort();
    process.once("SIGINT", onInt);
    try {
      if (this.filters.length === 0) await client.watchStatus(model, (s) => this.render(s, true), abort.signal);
      else await client.watchStatus(model, this.filteredRefresh(client, model, filter, abort.signal), abort.signal);
    } finally {
      process.off("SIGINT", onInt);
    }
    return 0;
  }

  /**
   * The watch pushes the whole model; with filters each change fetches the narrowed status, as
   * without --watch (one fetch at a time, the last change always shown).
   */
  private filteredRefresh(
    client: ControllerClient,
    model: string,
    filter: StatusFilter,
    signal: AbortSignal,
  ): () => void {
    let running = false;
    let again = false;
    return () => {
      again = true;
      if (running) return;
      running = true;
      void (async () => {
        while (again && !signal.aborted) {
          again = false;
          try {
            this.render(await client.status(model, filter), true);
          } catch (err) {
            // What was filtered for may be gone (a removed unit): said, and the watch goes on.
            if (!signal.aborted) this.context.stderr.write(`ERROR ${(err as Error).message}\n`);
          }
        }
        running = false;
      })();
    };
  }

  private render(s: ModelStatus, watching = false): void {
    const tty = (this.context.stdout as { isTTY?: boolean }).isTTY === true;
    if (watching && tty) this.context.stdout.write("\x1b[2J\x1b[H");
    else if (watching) this.context.stdout.write("---\n");
    if (this.format === "json") this.out(JSON.stringify(s, null, 2));
    else if (this.format === "yaml") this.context.stdout.write(stringify(s));
    else
      this.context.stdout.write(
        formatStatusTabular(s, { colour: colourWanted(this.context.stdout as { isTTY?: boolean }, this.context.env) }),
      );
  }
}

/** `web` is an application, `web/0` a unit, `3` a machine; the controller checks that each exists. */
function statusFilterOf(words: readonly string[]): StatusFilter {
  const f = { applications: [] as string[], units: [] as string[], machines: [] as string[] };
  for (const w of words) {
    if (w.includes("/")) f.units.push(w);
    else if (/^[0-9]+$/.test(w)) f.machines.push(w);
    else f.applications.push(w);
  }
  return f;
}
