import { Command, Option, UsageError } from "clipanion";
import type { DebugLogRecord } from "../../api";
import { StewardError, parseLogEntity, parseLogLevel, sanitizeForTerminal } from "../../api/core";
import { ModelCommand } from "../base-command";

export default class DebugLogCommand extends ModelCommand {
  static override paths = [["debug-log"]];
  static override usage = Command.Usage({
    category: "Models",
    description: "show the model's agent and hook logs, as they happen",
    details: `
      Streams what the model's agents log and what their hooks print (each line with its unit or
      machine, level and hook), through the controller, as \`juju debug-log\` does. It starts with
      the last \`--lines\` records (all that the controller keeps with \`--replay\`) and then follows
      new ones until Ctrl-C, or stops after them with \`--no-tail\`.

      \`--include\` and \`--exclude\` take a unit (\`web/0\`), an application (\`web\`) or a machine
      (\`machine-0\`, or \`0\`), and may be repeated. \`--level\` shows that level and the more severe
      ones: DEBUG, INFO, WARNING, ERROR. A hook's standard output is INFO, its standard error WARNING,
      and the \`log\` tool's lines have the level it was given.
    `,
    examples: [
      ["Follow everything", "$0 debug-log"],
      ["What web/0 logged so far, then stop", "$0 debug-log --include web/0 --replay --no-tail"],
      ["Warnings and errors of machine 1", "$0 debug-log --include machine-1 --level WARNING"],
    ],
  });

  include = Option.Array("-i,--include", [], {
    description: "Only these units, applications or machines (repeatable)",
  });
  exclude = Option.Array("-x,--exclude", [], { description: "Not these units, applications or machines (repeatable)" });
  level = Option.String("-l,--level", {
    description: "Least severe level shown: DEBUG, INFO, WARNING or ERROR (default: all)",
  });
  replay = Option.Boolean("--replay", false, { description: "Start with every record the controller keeps" });
  lines = Option.String("-n,--lines", "10", { description: "How many recent records to start with (default 10)" });
  noTail = Option.Boolean("--no-tail", false, { description: "Stop after the recent records instead of following" });

  async run(): Promise<number> {
    // Every argument is checked before anything is asked of the controller.
    const usage = (fn: () => unknown): void => {
      try {
        fn();
      } catch (err) {
        throw StewardError.isInstance(err) ? new UsageError(err.message) : err;
      }
    };
    for (const e of [...this.include, ...this.exclude]) usage(() => parseLogEntity(e));
    let level: string | undefined;
    if (this.level !== undefined)
      usage(() => {
        level = parseLogLevel(this.level!);
      });
    if (!/^\d{1,6}$/.test(this.lines))
      throw new UsageError(`--lines must be a whole number (at most 100000), got "${this.lines}"`);
    const lines = Number(this.lines);
    if (lines > 100_000) throw new UsageError(`--lines must be at most 100000, got ${lines}`);

    const client = await this.connect();
    const model = await this.model();
    const abort = new AbortController();
    const onInt = (): void => abort.abort();
    process.once("SIGINT", onInt);
    try {
      await client.debugLog(
        model,
        {
          include: this.include,
          exclude: this.exclude,
          lines,
          replay: this.replay,
          tail: !this.noTail,
          ...(level ? { level } : {}),
        },
        (r) => this.out(formatRecord(r)),
        {
          signal: abort.signal,
          onDropped: (n) => this.progress(`(${n} log records skipped: this client read too slowly)`),
        },
      );
    } finally {
      process.off("SIGINT", onInt);
    }
    return 0;
  }
}

/** `web/0 2026-11-23T14:02:11.000Z INFO install: message`; everything from the machine made terminal-safe. */
export function formatRecord(r: DebugLogRecord): string {
  const who = r.unit ?? (r.machine ? `machine-${r.machine}` : "model");
  const what = r.hook ?? r.source;
  return sanitizeForTerminal(`${who} ${r.ts} ${r.level} ${what}: ${r.message}`, { keepNewlines: false });
}
