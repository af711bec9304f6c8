/**
 * Tab completion for the console and for shells (`steward completion`): command names, each
 * command's options (read from its declarations by command-spec.ts, so a new option completes without
 * more code), and the names a command takes: models, controllers, applications and units (the
 * applications grant-secret and revoke-secret name after the secret).
 */
import { COMMAND_NAMES, loadCommand } from "../command-names";
import type { CommandName } from "../command-names";
import { commandSpec } from "../command-spec";

export interface CompletionSources {
  models(): Promise<string[]>;
  controllers(): Promise<string[]>;
  /** The applications and units of the model in use. */
  entities(): Promise<string[]>;
}

/** Words the console understands besides the commands. */
export const CONSOLE_BUILTINS = ["use", "exit", "quit"];

/** Commands whose positional arguments are applications or units. */
const TAKES_ENTITIES = new Set([
  "status",
  "show-unit",
  "show-status-log",
  "run",
  "remove-unit",
  "attach-storage",
  "resolve",
  "config",
  "add-unit",
  "remove-application",
  "integrate",
  "remove-integration",
  "refresh",
  "wait-for",
]);
const MODEL_OPTIONS = new Set(["-m", "--model"]);
const CONTROLLER_OPTIONS = new Set(["-c", "--controller"]);

interface OptionDef {
  names: string[];
  takesValue: boolean;
}

/** Each command's options, from its declarations (command-spec.ts). */
function optionsOf(command: string): OptionDef[] {
  const spec = commandSpec(loadCommand(command as CommandName) as never);
  return [
    ...spec.options.filter((o) => !o.hidden).map((o) => ({ names: o.names, takesValue: o.arity > 0 })),
    { names: ["-h", "--help"], takesValue: false },
  ];
}

/**
 * Candidates for the word being typed (`current`) after `words`. Lookups that fail (no controller
 * yet, a model that does not exist) complete nothing rather than fail the prompt.
 */
export async function completeWords(
  words: string[],
  current: string,
  sources: CompletionSources,
  inConsole: boolean,
): Promise<string[]> {
  const soft = (p: Promise<string[]>): Promise<string[]> => p.catch(() => []);
  let candidates: string[] = [];
  const command = words[0];
  const prev = words[words.length - 1];
  if (command === undefined) candidates = [...COMMAND_NAMES, ...(inConsole ? CONSOLE_BUILTINS : [])];
  else if (inConsole && command === "use") candidates = words.length === 1 ? await soft(sources.models()) : [];
  else if (!(COMMAND_NAMES as readonly string[]).includes(command)) candidates = [];
  else if (words.length > 1 && prev !== undefined && MODEL_OPTIONS.has(prev)) candidates = await soft(sources.models());
  else if (words.length > 1 && prev !== undefined && CONTROLLER_OPTIONS.has(prev))
    candidates = await soft(sources.controllers());
  else if (words.length > 1 && optionsOf(command).some((o) => o.takesValue && o.names.includes(prev!))) candidates = [];
  else if (current.startsWith("-"))
    candidates = optionsOf(command)
      .flatMap((o) => o.names)
      .filter((n) => n.startsWith("--") || current.length <= 2);
  else if (command === "help") candidates = [...COMMAND_NAMES];
  else if (command === "switch" || command === "destroy-model") candidates = await soft(sources.models());
  else if (command === "wait-for" && words.length === 1) candidates = ["model", "application", "unit"];
  else if (command === "wait-for" && words[1] === "model") candidates = await soft(sources.models());
  else if (TAKES_ENTITIES.has(command)) candidates = await soft(sources.entities());
  // After the secret, the applications it is granted to or taken from.
  else if ((command === "grant-secret" || command === "revoke-secret") && words.length >= 2)
    candidates = (await soft(sources.entities())).filter((e) => !e.includes("/"));
  return [...new Set(candidates)].filter((c) => c.startsWith(current)).sort();
}
