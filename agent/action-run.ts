/**
 * {@link ActionRun} is one running action as its tools see it: the parameters action-get reads, the
 * results action-set builds (dotted keys nest, as in Juju: `a.b=c` is `{a: {b: c}}`), the failure
 * action-fail records and the lines action-log adds, all bounded (TASK_LIMITS) so the report fits
 * the controller's record. It ends as the report the controller keeps.
 */
import type { QueuedAction, TaskFinish } from "../api/core";
import { TASK_LIMITS } from "../api/core";

/** Result keys: lower-case words joined by dots; Juju reserves these for the action's output. */
const RESULT_KEY = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;
const RESERVED_RESULT_KEYS = ["stdout", "stderr", "stdout-encoding", "stderr-encoding"];

export class ActionRun {
  readonly id: number;
  readonly name: string;
  readonly params: QueuedAction["params"];
  private readonly results: Record<string, unknown> = {};
  private failure?: string;
  private readonly logLines: { ts: string; message: string }[] = [];
  private droppedLines = 0;

  constructor(task: QueuedAction) {
    this.id = task.id;
    this.name = task.action;
    this.params = task.params;
  }

  /** Sets results; returns why not (and sets none of them) when a key or the size is wrong. */
  set(values: Record<string, string>): string | undefined {
    const next = structuredClone(this.results);
    for (const [key, value] of Object.entries(values)) {
      if (!RESULT_KEY.test(key))
        return `"${key}" is not a valid key: lower-case letters, digits and hyphens, with dots between levels (e.g. backup.path)`;
      if (RESERVED_RESULT_KEYS.includes(key.split(".")[0]!)) return `"${key}" is reserved for the action's output`;
      const parts = key.split(".");
      let at = next;
      for (const part of parts.slice(0, -1)) {
        const inner = at[part];
        if (typeof inner === "string") return `"${key}" would replace the value already set at ${part}`;
        at = (at[part] ??= {}) as Record<string, unknown>;
      }
      const last = parts[parts.length - 1]!;
      if (typeof at[last] === "object") return `"${key}" would replace the values already set under it`;
      at[last] = value;
    }
    const bytes = Buffer.byteLength(JSON.stringify(next));
    if (bytes > TASK_LIMITS.resultsBytes)
      return `the results would be ${bytes} bytes as JSON; at most ${TASK_LIMITS.resultsBytes} are kept`;
    Object.assign(this.results, next);
    return undefined;
  }

  fail(message: string): void {
    this.failure = (message || "action-fail called").slice(0, TASK_LIMITS.messageChars);
  }

  log(message: string): void {
    if (this.logLines.length >= TASK_LIMITS.logEntries - 1) {
      this.droppedLines++;
      return;
    }
    this.logLines.push({ ts: new Date().toISOString(), message: message.slice(0, TASK_LIMITS.logChars) });
  }

  /** The report of the ended action, from its exit code and the end of its output. */
  report(unit: string, exitCode: number, output: string): TaskFinish {
    const failed = this.failure !== undefined || exitCode !== 0;
    const message = this.failure ?? (exitCode !== 0 ? `exit status ${exitCode}` : "");
    const log =
      this.droppedLines > 0
        ? [
            ...this.logLines,
            { ts: new Date().toISOString(), message: `(${this.droppedLines} more action-log lines not kept)` },
          ]
        : this.logLines;
    return {
      unit,
      id: this.id,
      status: failed ? "failed" : "completed",
      message,
      results: this.results,
      log,
      output: output.slice(-TASK_LIMITS.outputChars),
      exitCode,
    };
  }
}
