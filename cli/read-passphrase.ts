/**
 * A backup's (or a model export's) passphrase, never from the command line (it would show in the process list and shell
 * history): from the variable `--passphrase-env` names, the first line of `--passphrase-file`, or a
 * prompt that does not echo when standard input is a terminal (asked twice when making a backup).
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { Option, UsageError } from "clipanion";
import type { StewardContext } from "./context";
import { promptHidden } from "./read-password";

type Input = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };

export const passphraseOptions = (what = "backup") => ({
  passphraseEnv: Option.String("--passphrase-env", {
    description: `Read the ${what} passphrase from this environment variable`,
  }),
  passphraseFile: Option.String("--passphrase-file", {
    description: `Read the ${what} passphrase from the first line of this file`,
  }),
});

export async function readPassphrase(
  ctx: StewardContext,
  o: { passphraseEnv?: string | undefined; passphraseFile?: string | undefined },
  confirm: boolean,
  what = "backup",
): Promise<string> {
  if (o.passphraseEnv && o.passphraseFile) throw new UsageError("give --passphrase-env or --passphrase-file, not both");
  const a = /^[aeiou]/.test(what) ? "an" : "a";
  let passphrase: string;
  if (o.passphraseEnv) {
    passphrase = ctx.env[o.passphraseEnv] ?? "";
    if (!passphrase)
      throw new UsageError(`environment variable ${o.passphraseEnv} (from --passphrase-env) is empty or not set`);
  } else if (o.passphraseFile) {
    const text = await readFile(resolve(ctx.cwd, o.passphraseFile), "utf8").catch((e: Error) => {
      throw new UsageError(`cannot read --passphrase-file: ${e.message}`);
    });
    passphrase = text.split(/\r?\n/)[0] ?? "";
  } else {
    const stdin = ctx.stdin as Input;
    if (!stdin.isTTY || !stdin.setRawMode)
      throw new UsageError(
        `${a} ${what} passphrase is needed: --passphrase-env VAR or --passphrase-file FILE (no terminal to ask on)`,
      );
    passphrase = await promptHidden(stdin, ctx.stderr, `${what[0]!.toUpperCase()}${what.slice(1)} passphrase: `);
    if (confirm && (await promptHidden(stdin, ctx.stderr, "Again: ")) !== passphrase)
      throw new UsageError("the passphrases differ");
  }
  if (passphrase.length < 8) throw new UsageError(`${a} ${what} passphrase must be at least 8 characters`);
  return passphrase;
}
