/** The `steward` command line: runs one command, or the console when none is named (commands: command-names.ts). */
import { Cli } from "clipanion";
import { WEB_CONSOLE_ENV } from "../api/core";
import type { StewardContext } from "./context";
import type { CommandName } from "./command-names";
import { COMMAND_NAMES, buildCli } from "./command-names";
import { unknownCommandText } from "./steward-cli";
import { colourWanted } from "./colour";
import type * as Console from "./console/console";
import type * as Restricted from "./console/restricted";
import type * as WebTerminalModule from "./console/web-terminal";

function namedCommand(args: string[]): CommandName | undefined {
  const name = COMMAND_NAMES.find((n) => n === args[0]);
  return name === "help" ? undefined : name;
}

/**
 * Runs the CLI with `args` and returns its exit code (used by main and by tests in-process). No
 * arguments start the console (console/console.ts); `cliMain` is the script the console runs each
 * command with (main.js passes itself, so a bundle runs itself).
 *
 * With `STEWARD_CONSOLE_TERMINAL=web` the console takes its pipes for a terminal, and with
 * `STEWARD_CONSOLE_RESTRICTED=1` (the web console, on a controller host) only commands that talk to
 * the controller run: the console refuses the others and each command checks its own words again.
 */
export function runCli(
  args: string[],
  context: Partial<StewardContext> = {},
  opts: { cliMain?: string } = {},
): Promise<number> {
  const env = context.env ?? process.env;
  const restricted = env[WEB_CONSOLE_ENV.restricted] === "1";
  const stderr = context.stderr ?? process.stderr;
  if (args.length === 0) {
    const { runConsole } = require("./console/console") as typeof Console;
    const stdin = context.stdin ?? process.stdin;
    const stdout = context.stdout ?? process.stdout;
    const terminal =
      env[WEB_CONSOLE_ENV.terminal] === "web"
        ? (require("./console/web-terminal") as typeof WebTerminalModule).WebTerminal.start(stdin, stdout)
        : undefined;
    // One screen: errors on the same stream as the prompt, so that they cannot arrive after it.
    return runConsole({
      stdin,
      stdout,
      stderr: terminal ? stdout : stderr,
      env,
      cwd: context.cwd ?? process.cwd(),
      ...(opts.cliMain ? { cliMain: opts.cliMain } : {}),
      ...(terminal ? { terminal } : {}),
      restricted,
    }).finally(() => terminal?.close());
  }
  if (restricted) {
    const refused = (require("./console/restricted") as typeof Restricted).restrictedRefusal(args);
    if (refused) {
      stderr.write(`ERROR ${refused}\n`);
      return Promise.resolve(1);
    }
  }
  const [first] = args;
  if (first !== undefined && !first.startsWith("-") && !(COMMAND_NAMES as readonly string[]).includes(first)) {
    // A typo: the nearest names, without loading every command to find them.
    stderr.write(unknownCommandText(first, COMMAND_NAMES));
    return Promise.resolve(1);
  }
  const colour = colourWanted((context.stdout ?? process.stdout) as { isTTY?: boolean }, env);
  return buildCli({ colors: colour, only: namedCommand(args) }).run(args, {
    ...Cli.defaultContext,
    colorDepth: colour ? Math.max(4, process.stdout.isTTY ? process.stdout.getColorDepth() : 4) : 1,
    env: process.env,
    cwd: process.cwd(),
    ...context,
  } as StewardContext);
}
