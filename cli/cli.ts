/** The `steward` command line: every command, listed once. */
import { Builtins, Cli } from "clipanion";
import { STEWARD_VERSION, WEB_CONSOLE_ENV } from "../api/core";
import type { StewardContext } from "./context";
import type { CommandClass } from "clipanion";
import type * as Console from "./console/console";
import type * as Restricted from "./console/restricted";
import type * as WebTerminalModule from "./console/web-terminal";


/**
 * Every command, in the order `steward help` lists them; each lives in commands/<name>.ts with
 * `paths = [[name]]` (a test checks). They load lazily: a run of one command loads only that file,
 * and clipanion builds its parser for that command alone (building it for all of them cost ~60 ms).
 */
export const COMMAND_NAMES = [
  "bootstrap", "controllers", "show-controller", "dashboard", "enable-ha", "add-spare", "set-replica-cloud", "upgrade-controller", "login", "logout", "change-password", "add-user", "grant", "revoke", "destroy-controller",
  "create-backup", "backups", "download-backup", "restore-backup",
  "add-model", "models", "switch", "model-config", "model-constraints", "status", "wait-for", "apply", "diff", "destroy-model", "export-model", "import-model", "migrate", "show-migration",
  "deploy", "add-unit", "remove-unit", "config", "constraints", "refresh", "remove-application",
  "integrate", "remove-integration", "resolve", "show-unit", "show-status-log", "debug-log",
  "run", "show-task", "operations",
  "add-machine", "machines", "remove-machine",
  "add-credential", "add-k8s", "credentials", "remove-credential",
  "completion", "help", "version",
] as const;

export function loadCommand(name: (typeof COMMAND_NAMES)[number]): CommandClass<StewardContext> {
  return (require(`./commands/${name}.js`) as { default: CommandClass<StewardContext> }).default;
}

/** Every command class (for help and tests). */
export function allCommands(): CommandClass<StewardContext>[] {
  return COMMAND_NAMES.map(loadCommand);
}

/**
 * The CLI with every command, or with only `only` when given: a run that names a command needs
 * just that one (a typo or `help` falls back to all, for suggestions and listings).
 */
export function buildCli(opts: { colors?: boolean; only?: (typeof COMMAND_NAMES)[number] } = {}): Cli<StewardContext> {
  const cli = new Cli<StewardContext>({ binaryLabel: "Steward", binaryName: "steward", binaryVersion: STEWARD_VERSION, enableColors: opts.colors ?? false });
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const c of opts.only ? [loadCommand(opts.only)] : allCommands()) cli.register(c);
  return cli;
}

function namedCommand(args: string[]): (typeof COMMAND_NAMES)[number] | undefined {
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
export function runCli(args: string[], context: Partial<StewardContext> = {}, opts: { cliMain?: string } = {}): Promise<number> {
  const env = context.env ?? process.env;
  const restricted = env[WEB_CONSOLE_ENV.restricted] === "1";
  const stderr = context.stderr ?? process.stderr;
  if (args.length === 0) {
    const { runConsole } = require("./console/console") as typeof Console;
    const stdin = context.stdin ?? process.stdin;
    const stdout = context.stdout ?? process.stdout;
    const terminal = env[WEB_CONSOLE_ENV.terminal] === "web" ? (require("./console/web-terminal") as typeof WebTerminalModule).WebTerminal.start(stdin, stdout) : undefined;
    // One screen: errors on the same stream as the prompt, so that they cannot arrive after it.
    return runConsole({ stdin, stdout, stderr: terminal ? stdout : stderr, env, cwd: context.cwd ?? process.cwd(), ...(opts.cliMain ? { cliMain: opts.cliMain } : {}), ...(terminal ? { terminal } : {}), restricted })
      .finally(() => terminal?.close());
  }
  if (restricted) {
    const refused = (require("./console/restricted") as typeof Restricted).restrictedRefusal(args);
    if (refused) { stderr.write(`ERROR ${refused}\n`); return Promise.resolve(1); }
  }
  const tty = process.stdout.isTTY === true && !process.env.NO_COLOR;
  return buildCli({ colors: tty, only: namedCommand(args) }).run(args, {
    ...Cli.defaultContext,
    colorDepth: tty ? process.stdout.getColorDepth() : 1,
    env: process.env,
    cwd: process.cwd(),
    ...context,
  } as StewardContext);
}
