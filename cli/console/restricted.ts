/**
 * What the web console (the dashboard's console pane) may run. It runs on a controller host, as the
 * controller's OS user, for whoever is logged in to the dashboard: so only commands that talk to
 * the API with that user's token, and nothing that reads a local file or path, reads the host's
 * environment, starts anything on the host or changes the client's own files. The controller then
 * checks every request against the user's permissions, as for any client.
 *
 * Set by the controller with `STEWARD_CONSOLE_RESTRICTED=1`; the console checks each line and every
 * command process checks its own arguments again (cli.ts), so nothing else reaches a command.
 */
import type { COMMAND_NAMES } from "../command-names";

type CommandName = (typeof COMMAND_NAMES)[number];

/** Options that read a local file, a path or the host's environment, with why (several commands share them). */
const LOCAL_OPTIONS: Record<string, string> = {
  "--file": "it reads a local file",
  "--path": "it reads a local directory",
  "--key-file": "it reads a local key file",
  "--key-env": "it reads the host's environment",
  "--passphrase-env": "it reads the host's environment",
  "--from-env": "it reads the host's environment",
  "--credential-file": "it reads a local file",
  "--endpoint-ca-file": "it reads a local file",
  "--vcenter-ca-file": "it reads a local file",
};

/** An option added later that names a file, directory, path or variable is refused until it is looked at. */
const LOCAL_LOOKING = /-(file|dir|directory|path|env)$/;

/**
 * The allow-list: every command that may run, with the options it must not take. Commands not here
 * are refused with the reason in {@link REFUSED}.
 */
export const WEB_CONSOLE_COMMANDS: Partial<
  Record<CommandName, { options?: string[]; refuseWord?: (word: string) => string | undefined }>
> = {
  "status": {},
  "models": {},
  "show-controller": {},
  "version": {},
  "help": {},
  "add-model": { options: ["--endpoint-ca-file", "--vcenter-ca-file"] },
  "model-config": {},
  "model-constraints": {},
  "wait-for": {},
  "destroy-model": {},
  "add-unit": {},
  "remove-unit": {},
  "storage": {},
  "show-storage": {},
  "detach-storage": {},
  "attach-storage": {},
  "remove-storage": {},
  "storage-pools": {},
  "create-storage-pool": {},
  "remove-storage-pool": {},
  "secrets": {},
  "show-secret": {},
  "grant-secret": {},
  "revoke-secret": {},
  "remove-secret": {},
  // Values typed here would pass through this host's process list: only a new name or description.
  "add-secret": { refuseWord: secretValueWord },
  "update-secret": { refuseWord: secretValueWord },
  "config": {},
  "constraints": {},
  "remove-application": {},
  "integrate": {},
  "remove-integration": {},
  "resolve": {},
  "show-unit": {},
  "show-status-log": {},
  "debug-log": {},
  "run": {},
  "show-task": {},
  "operations": {},
  "show-migration": {},
  "machines": {},
  "remove-machine": {},
  // local, manual, aws and vsphere machines are made by the controller; ssh: hosts need a private key from here.
  "add-machine": {
    options: ["--key-file", "--key-env", "--passphrase-env"],
    refuseWord: (w) =>
      w.startsWith("ssh:") ? "ssh: hosts need a private key, which the web console does not read" : undefined,
  },
  "grant": {},
  "revoke": {},
  "whoami": {},
  "users": {},
  "show-user": {},
  "disable-user": {},
  "enable-user": {},
  "remove-user": {},
  "credentials": {},
  "remove-credential": {},
  "backups": {},
  "enable-ha": { options: ["--key-file", "--key-env"] },
  "set-replica-cloud": { options: ["--endpoint-ca-file", "--vcenter-ca-file"] },
};

const OWN_MACHINE = "needs the steward CLI on your own machine";

/** A secret's values (`key=value`, `key#file=PATH`, `-` for standard input) are not taken in the web console. */
function secretValueWord(word: string): string | undefined {
  if (word === "-") return "standard input is this console's keyboard; give values from a file with the CLI";
  if (/^[^-][^=]*=/.test(word) || word.includes("#file="))
    return "a secret's values would pass through the controller host's process list and files; give them from a file or standard input with the CLI";
  return undefined;
}

/** Why each command outside the allow-list is refused. */
const REFUSED: Record<string, string> = {
  "bootstrap": `${OWN_MACHINE}: it reads local files and starts processes`,
  "destroy-controller": `${OWN_MACHINE}: it works on the client's own controller list and files`,
  "controllers": "lists a client's own controllers; show-controller shows this one",
  "switch": "in this console, use MODEL picks the model",
  "login": "this console runs as your dashboard session; log in there",
  "logout": "this console runs as your dashboard session; log out from the dashboard",
  "change-password": `${OWN_MACHINE}: it reads a password from the terminal`,
  "add-user": `${OWN_MACHINE}: it may read the new user's password from standard input`,
  "register": `${OWN_MACHINE}: it records the controller in your client's own list`,
  "add-controller": `${OWN_MACHINE}: it records the controller in your client's own list`,
  "add-spare": `${OWN_MACHINE}: it reads a private key from a local file`,
  "add-credential": `${OWN_MACHINE}: it reads the credential from local files or the environment`,
  "apply": `${OWN_MACHINE}: it reads a local model file`,
  "diff": `${OWN_MACHINE}: it reads a local model file`,
  "deploy": `${OWN_MACHINE}: it reads the operator from a local directory`,
  "refresh": `${OWN_MACHINE}: it reads the operator from a local directory`,
  "completion": "is for your own shell",
  "dashboard": "prints how to reach this dashboard, which you are using",
  "export-model": `${OWN_MACHINE}: it writes the model to a local file`,
  "import-model": `${OWN_MACHINE}: it reads the model from a local file`,
  "migrate": `${OWN_MACHINE}: it takes the target controller's login from your client's list of controllers`,
  "create-backup": `${OWN_MACHINE}: it reads the passphrase from the terminal, a file or the environment, and writes the backup to a local file`,
  "download-backup": `${OWN_MACHINE}: it writes the backup to a local file`,
  "restore-backup": `${OWN_MACHINE}: it reads a local backup file and starts a controller`,
  "upgrade-controller": `${OWN_MACHINE}: it restarts every replica, the one serving this console too, from the release your own steward carries`,
};

/** Why `words` (a command line without `steward`) may not run in the web console, or undefined when it may. */
export function restrictedRefusal(words: readonly string[]): string | undefined {
  const [command, ...rest] = words;
  if (command === undefined) return undefined;
  const allowed = WEB_CONSOLE_COMMANDS[command as CommandName];
  if (!allowed)
    return `${command} ${REFUSED[command] ?? `${OWN_MACHINE}: the web console runs only commands that talk to the controller`}`;
  for (const word of rest) {
    // --name=value and --name value alike; a value that merely looks like an option is refused too (harmless).
    const name = word.startsWith("--") ? word.split("=")[0]! : undefined;
    if (
      name !== undefined &&
      (LOCAL_OPTIONS[name] !== undefined || allowed.options?.includes(name) || LOCAL_LOOKING.test(name))
    ) {
      return `${command} ${name} ${OWN_MACHINE}: ${LOCAL_OPTIONS[name] ?? "it reads local files or the environment"}`;
    }
    const why = allowed.refuseWord?.(word);
    if (why) return `${command} ${word}: ${why} (${OWN_MACHINE})`;
  }
  return undefined;
}
