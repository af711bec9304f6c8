/**
 * The console's terminal when it runs behind the web console (`STEWARD_CONSOLE_TERMINAL=web`, set by
 * the controller): keystrokes arrive on standard input and the screen is standard output, both
 * pipes, so what a pseudo-terminal's line discipline would do is done here. Keystrokes go to the
 * prompt (readline in terminal mode) while no command runs; while one runs, Ctrl-C (`\x03`) sends
 * SIGINT to the process group (the console's own: the controller starts the console as a group
 * leader and the commands stay in its group, so one kill of the group ends everything), which the
 * console itself ignores; other keys typed meanwhile wait for the next prompt, as a terminal's
 * type-ahead does, and Ctrl-C drops them. The browser's size comes as JSON lines on fd 3
 * (`{"resize":{"cols":n,"rows":n}}`): readline reads `columns` from its output and redraws on 'resize'.
 */
import type { ChildProcess } from "node:child_process";
import { fstatSync } from "node:fs";
import { Socket } from "node:net";
import { PassThrough } from "node:stream";
import type { Readable, Writable } from "node:stream";
import { WEB_CONSOLE_CONTROL_FD } from "../../api/core";

/** Keys typed while a command runs that are kept for the prompt; beyond it they are dropped. */
const MAX_TYPEAHEAD = 4096;
/**
 * Output the screen may have waiting before keys are no longer read. Writes to a pipe never block
 * in Node: without this, keys typed (echoed) into a browser that reads nothing would pile up here
 * without end. Not reading keys fills our stdin, which the controller answers by reading no more
 * frames from the browser.
 */
// Small: the line editor echoes each key with a write of its own, and every write waiting costs far
// more than its byte (a MiB of echo waiting held ~150 MB).
const MAX_PENDING_OUTPUT = 64 * 1024;
/** Keys the line editor has not taken yet (a paste) before keys are no longer read. */
const MAX_PENDING_KEYS = 64 * 1024;
/** A control line longer than this is not a resize message: dropped. */
const MAX_CONTROL_LINE = 1024;

type Screen = Writable & { columns?: number; rows?: number };

export class WebTerminal {
  /** What the prompt reads: keystrokes while no command runs. Looks like a terminal to readline. */
  readonly input: PassThrough & { isTTY: true };
  private running?: ChildProcess;
  private typeahead = "";
  private control?: Socket;

  private keys?: Readable;

  private constructor(readonly output: Screen) {
    this.input = Object.assign(new PassThrough({ encoding: "utf8" }), { isTTY: true as const });
    output.columns ??= 80;
    output.rows ??= 24;
  }

  /** Starts reading keys from `keys` and resize messages from fd 3 when it is open. */
  static start(keys: Readable, output: Writable): WebTerminal {
    const t = new WebTerminal(output);
    t.keys = keys;
    // Ctrl-C reaches the console too (it is in the group it signals): it must not end it.
    process.on("SIGINT", () => undefined);
    keys.setEncoding("utf8");
    keys.on("data", (d: string) => t.keystrokes(d));
    keys.once("end", () => t.hangUp());
    if (hasFd(WEB_CONSOLE_CONTROL_FD))
      t.readControl(new Socket({ fd: WEB_CONSOLE_CONTROL_FD, readable: true, writable: false }));
    return t;
  }

  /** Stops reading keys and resize messages (the console has ended: nothing may keep the process alive). */
  close(): void {
    this.keys?.destroy();
    this.control?.destroy();
    this.input.end();
  }

  /**
   * The keys ended: the controller closed the session, or died. As a terminal's hang-up does, a
   * running command is ended with the console (it could otherwise follow a log for as long as the
   * token lasts, with nobody reading); at the prompt the console just ends.
   */
  private hangUp(): void {
    this.input.end();
    this.control?.destroy();
    if (this.running)
      try {
        process.kill(0, "SIGHUP");
      } catch {
        /* the group is gone */
      }
  }

  /** A command started: keys now wait, and Ctrl-C interrupts it. */
  commandStarted(child: ChildProcess): void {
    this.running = child;
  }

  /** The command ended: keys typed meanwhile go to the prompt. */
  commandEnded(): void {
    this.running = undefined;
    const kept = this.typeahead;
    this.typeahead = "";
    if (kept) this.input.write(kept);
  }

  private keystrokes(d: string): void {
    this.route(d);
    this.throttle();
  }

  /** Stops reading keys while the screen or the line editor is behind; reads again once both caught up. */
  private throttle(): void {
    const behind =
      this.output.writableLength > MAX_PENDING_OUTPUT
        ? this.output
        : this.input.writableLength > MAX_PENDING_KEYS
          ? this.input
          : undefined;
    if (!behind) {
      if (this.keys?.isPaused()) this.keys.resume();
      return;
    }
    if (this.keys?.isPaused()) return;
    this.keys?.pause();
    behind.once("drain", () => {
      this.keys?.resume();
      this.throttle();
    });
  }

  private route(d: string): void {
    if (!this.running) {
      this.input.write(d);
      return;
    }
    const at = d.lastIndexOf("\u0003");
    if (at < 0) {
      this.typeahead = (this.typeahead + d).slice(0, MAX_TYPEAHEAD);
      return;
    }
    // As a terminal's interrupt does: the type-ahead before it is flushed, the group signalled.
    this.typeahead = d.slice(at + 1).slice(0, MAX_TYPEAHEAD);
    try {
      process.kill(0, "SIGINT");
    } catch {
      /* the group is gone: nothing to interrupt */
    }
  }

  private readControl(s: Socket): void {
    this.control = s;
    let buffered = "";
    s.setEncoding("utf8");
    s.on("error", () => undefined);
    s.on("data", (d: string) => {
      buffered += d;
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        this.controlLine(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
      if (buffered.length > MAX_CONTROL_LINE) buffered = "";
    });
  }

  private controlLine(line: string): void {
    let msg: { resize?: { cols?: unknown; rows?: unknown } };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      return;
    }
    const { cols, rows } = msg?.resize ?? {};
    if (!isSize(cols) || !isSize(rows)) return;
    if (cols === this.output.columns && rows === this.output.rows) return;
    this.output.columns = cols;
    this.output.rows = rows;
    this.output.emit("resize");
  }
}

function isSize(n: unknown): n is number {
  return typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 1000;
}

function hasFd(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}
