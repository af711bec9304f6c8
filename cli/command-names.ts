/**
 * The command table: every command's name, how one is loaded, and the clipanion CLI built from them.
 * Its own file so that the console (console/*), which completes and checks command names, and cli.ts,
 * which starts the console, do not import each other.
 */
import { Builtins } from "clipanion";
import type { CommandClass } from "clipanion";
import { STEWARD_VERSION } from "../api/core";
import type { StewardContext } from "./context";
import { StewardCli } from "./steward-cli";

/**
 * Every command, in the order `steward help` lists them; each lives in commands/<name>.ts with
 * `paths = [[name]]` (a test checks). They load lazily: a run of one command loads only that file,
 * and clipanion builds its parser for that command alone (building it for all of them cost ~60 ms).
 */
export const COMMAND_NAMES = [
  "bootstrap",
  "controllers",
  "show-controller",
  "dashboard",
  "enable-ha",
  "add-spare",
  "set-replica-cloud",
  "release-keys",
  "upgrade-controller",
  "login",
  "logout",
  "change-password",
  "register",
  "add-controller",
  "whoami",
  "add-user",
  "users",
  "show-user",
  "disable-user",
  "enable-user",
  "remove-user",
  "grant",
  "revoke",
  "destroy-controller",
  "create-backup",
  "backups",
  "download-backup",
  "restore-backup",
  "add-model",
  "models",
  "switch",
  "model-config",
  "model-constraints",
  "status",
  "wait-for",
  "apply",
  "diff",
  "destroy-model",
  "export-model",
  "upgrade-model",
  "import-model",
  "migrate",
  "show-migration",
  "deploy",
  "add-unit",
  "remove-unit",
  "storage",
  "show-storage",
  "detach-storage",
  "attach-storage",
  "remove-storage",
  "storage-pools",
  "create-storage-pool",
  "remove-storage-pool",
  "secrets",
  "show-secret",
  "add-secret",
  "update-secret",
  "grant-secret",
  "revoke-secret",
  "remove-secret",
  "config",
  "constraints",
  "leadership-lease",
  "refresh",
  "remove-application",
  "integrate",
  "remove-integration",
  "resolve",
  "show-unit",
  "show-status-log",
  "debug-log",
  "run",
  "show-task",
  "operations",
  "add-machine",
  "machines",
  "remove-machine",
  "add-credential",
  "add-k8s",
  "credentials",
  "remove-credential",
  "completion",
  "help",
  "version",
] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

export function loadCommand(name: CommandName): CommandClass<StewardContext> {
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
export function buildCli(opts: { colors?: boolean; only?: CommandName } = {}): StewardCli<StewardContext> {
  const cli = new StewardCli<StewardContext>(
    {
      binaryLabel: "Steward",
      binaryName: "steward",
      binaryVersion: STEWARD_VERSION,
      enableColors: opts.colors ?? false,
    },
    COMMAND_NAMES,
  );
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const c of opts.only ? [loadCommand(opts.only)] : allCommands()) cli.register(c);
  return cli;
}
