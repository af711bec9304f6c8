/**
 * Reads a new password for a command, never from its arguments (they show in the process list and
 * shell history): from STEWARD_NEW_PASSWORD, from a prompt that does not echo when standard input is
 * a terminal, or else from standard input (its first line).
 */
import { UsageError } from "clipanion";
import type { StewardContext } from "./context";

type Input = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };

export async function readNewPassword(context: StewardContext, prompt: string): Promise<string> {
  const stdin = context.stdin as Input;
  const password =
    context.env.STEWARD_NEW_PASSWORD ??
    (stdin.isTTY && stdin.setRawMode
      ? await promptHidden(stdin, context.stderr, prompt)
      : firstLine(await readAll(stdin)));
  if (password.length < 8)
    throw new UsageError(
      "the new password must be at least 8 characters (type it at the prompt, pipe it in, or set STEWARD_NEW_PASSWORD)",
    );
  return password;
}

function firstLine(text: string): string {
  return text.split(/\r?\n/)[0] ?? "";
}

/** All of a stream's text (a password piped in). */
export function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = "";
    stream.on("data", (d: Buffer | string) => {
      s += d.toString();
    });
    stream.on("end", () => resolve(s));
    stream.on("error", reject);
  });
}

/** Reads one line from a terminal without echoing it. */
export function promptHidden(stdin: Input, out: NodeJS.WritableStream, prompt: string): Promise<string> {
  out.write(prompt);
  stdin.setRawMode!(true);
  return new Promise((resolve, reject) => {
    let s = "";
    const done = (err?: Error): void => {
      stdin.removeListener("data", onData);
      stdin.setRawMode!(false);
      stdin.pause();
      out.write("\n");
      if (err) reject(err);
      else resolve(s);
    };
    const onData = (d: Buffer | string): void => {
      for (const ch of d.toString()) {
        if (ch === "\r" || ch === "\n") return done();
        if (ch === "\u0003") return done(new UsageError("cancelled"));
        if (ch === "\u007f" || ch === "\b") s = s.slice(0, -1);
        else s += ch;
      }
    };
    stdin.on("data", onData);
    stdin.resume();
  });
}
