/**
 * A hook's output, cut into what the controller is sent: whole lines for `steward debug-log`, and
 * the last lines of a failed hook for `steward show-unit`. Both are bounded and made terminal-safe
 * here, so a hook printing megabytes or escape sequences costs the controller nothing.
 */
import { StringDecoder } from "node:string_decoder";
import { HOOK_FAILURE_OUTPUT_MAX_CHARS, LOG_MESSAGE_MAX_CHARS, stripControlChars } from "../api/core";

/** How many lines of a failed hook's output `show-unit` shows. */
export const FAILURE_TAIL_LINES = 20;

/** The last {@link FAILURE_TAIL_LINES} lines of `output`, at most {@link HOOK_FAILURE_OUTPUT_MAX_CHARS}, without control characters. */
export function failureTail(output: string): string {
  const lines = stripControlChars(output.replace(/\r\n?/g, "\n"), true).split("\n");
  const kept = lines.slice(-FAILURE_TAIL_LINES).join("\n").trim();
  return kept.length > HOOK_FAILURE_OUTPUT_MAX_CHARS ? kept.slice(-HOOK_FAILURE_OUTPUT_MAX_CHARS) : kept;
}

/**
 * Splits a stream's chunks into lines for `emit`; a line longer than {@link LOG_MESSAGE_MAX_CHARS}
 * is emitted in pieces, so one without a newline cannot grow without bound.
 */
export class LineSplitter {
  private partial = "";
  /** Keeps a character split between two chunks whole. */
  private readonly decoder = new StringDecoder("utf8");

  constructor(private readonly emit: (line: string) => void) {}

  push(chunk: Buffer): void {
    const parts = (this.partial + this.decoder.write(chunk)).split("\n");
    this.partial = parts.pop() ?? "";
    for (const line of parts) this.emitLine(line);
    while (this.partial.length > LOG_MESSAGE_MAX_CHARS) {
      this.emitLine(this.partial.slice(0, LOG_MESSAGE_MAX_CHARS));
      this.partial = this.partial.slice(LOG_MESSAGE_MAX_CHARS);
    }
  }

  /** Emits what is left after the last newline. */
  end(): void {
    this.partial += this.decoder.end();
    if (this.partial) this.emitLine(this.partial);
    this.partial = "";
  }

  private emitLine(line: string): void {
    const clean = stripControlChars(line.replace(/\r$/, ""));
    if (clean.trim()) this.emit(clean.slice(0, LOG_MESSAGE_MAX_CHARS));
  }
}
