/** The `steward` command line: every command, listed once. */
import { Builtins, Cli } from "clipanion";
import { STEWARD_VERSION } from "../api/core";
import type { StewardContext } from "./context";
import AddMachineCommand from "./commands/add-machine";
import AddModelCommand from "./commands/add-model";
import AddUnitCommand from "./commands/add-unit";
import AddUserCommand from "./commands/add-user";
import ApplyCommand from "./commands/apply";
import BootstrapCommand from "./commands/bootstrap";
import ConfigCommand from "./commands/config";
import ControllersCommand from "./commands/controllers";
import DeployCommand from "./commands/deploy";
import DestroyControllerCommand from "./commands/destroy-controller";
import DestroyModelCommand from "./commands/destroy-model";
import DiffCommand from "./commands/diff";
import GrantCommand from "./commands/grant";
import LoginCommand from "./commands/login";
import LogoutCommand from "./commands/logout";
import ChangePasswordCommand from "./commands/change-password";
import RevokeCommand from "./commands/revoke";
import MachinesCommand from "./commands/machines";
import ModelsCommand from "./commands/models";
import RemoveApplicationCommand from "./commands/remove-application";
import RemoveMachineCommand from "./commands/remove-machine";
import RemoveUnitCommand from "./commands/remove-unit";
import StatusCommand from "./commands/status";
import SwitchCommand from "./commands/switch";
import IntegrateCommand from "./commands/integrate";
import ModelConfigCommand from "./commands/model-config";
import RemoveIntegrationCommand from "./commands/remove-integration";
import ResolveCommand from "./commands/resolve";
import ShowUnitCommand from "./commands/show-unit";
import DebugLogCommand from "./commands/debug-log";
import EnableHaCommand from "./commands/enable-ha";
import AddSpareCommand from "./commands/add-spare";
import ShowControllerCommand from "./commands/show-controller";
import HelpCommand from "./commands/help";
import VersionCommand from "./commands/version";
import RefreshCommand from "./commands/refresh";

export const commands = [
  BootstrapCommand, ControllersCommand, ShowControllerCommand, EnableHaCommand, AddSpareCommand, LoginCommand, LogoutCommand, ChangePasswordCommand, AddUserCommand, GrantCommand, RevokeCommand, DestroyControllerCommand,
  AddModelCommand, ModelsCommand, SwitchCommand, ModelConfigCommand, StatusCommand, ApplyCommand, DiffCommand, DestroyModelCommand,
  DeployCommand, AddUnitCommand, RemoveUnitCommand, ConfigCommand, RemoveApplicationCommand,
  IntegrateCommand, RemoveIntegrationCommand, ResolveCommand, ShowUnitCommand, DebugLogCommand,
  AddMachineCommand, MachinesCommand, RemoveMachineCommand,
  HelpCommand, VersionCommand, RefreshCommand,
];

export function buildCli(opts: { colors?: boolean } = {}): Cli<StewardContext> {
  const cli = new Cli<StewardContext>({ binaryLabel: "Steward", binaryName: "steward", binaryVersion: STEWARD_VERSION, enableColors: opts.colors ?? false });
  cli.register(Builtins.HelpCommand);
  cli.register(Builtins.VersionCommand);
  for (const c of commands) cli.register(c);
  return cli;
}

/** Runs the CLI with `args` and returns its exit code (used by main and by tests in-process). */
export function runCli(args: string[], context: Partial<StewardContext> = {}): Promise<number> {
  const tty = process.stdout.isTTY === true && !process.env.NO_COLOR;
  return buildCli({ colors: tty }).run(args, {
    ...Cli.defaultContext,
    colorDepth: tty ? process.stdout.getColorDepth() : 1,
    env: process.env,
    cwd: process.cwd(),
    ...context,
  } as StewardContext);
}
