/**
 * What a command takes, read from its clipanion declarations: its options (names, whether they take
 * a value, required) and its positional arguments. Help (help-text.ts), the usage diagnosis
 * (usage-problem.ts) and completion all read this one description instead of parsing clipanion's
 * rendered usage strings; and each option's value gets a real name here (`--timeout <duration>`)
 * where clipanion only ever prints `#0`.
 */
import { Command } from "clipanion";
import type { CommandClass } from "clipanion";
import { KIND_CONTRACTS } from "./kind-flags";

export interface OptionSpec {
  /** As declared, e.g. `["-m", "--model"]`. */
  names: string[];
  /** How many values it takes: 0 for a flag. */
  arity: number;
  required: boolean;
  hidden: boolean;
  description: string;
}

export interface CommandSpec {
  options: OptionSpec[];
  /** Positional arguments in order; optional ones after the required ones. */
  positionals: { name: string; required: boolean }[];
  /** Any number more (`Option.Rest`), with how many of them are required. */
  rest?: { name: string; required: number };
}

interface OptionDescriptor {
  definition(builder: unknown, key: string): void;
}

/** Reads a command class's declarations the way clipanion's own registration does (through each option's `definition`). */
export function commandSpec(commandClass: CommandClass<never>): CommandSpec {
  const spec: CommandSpec = { options: [], positionals: [] };
  const recorder = {
    addOption(o: { names: string[]; arity?: number; required?: boolean; hidden?: boolean; description?: string }) {
      spec.options.push({
        names: o.names,
        arity: o.arity ?? 0,
        required: o.required ?? false,
        hidden: o.hidden ?? false,
        description: o.description ?? "",
      });
    },
    addPositional(o: { name?: string; required?: boolean } = {}) {
      spec.positionals.push({ name: o.name ?? "arg", required: o.required ?? true });
    },
    addRest(o: { name?: string; required?: number } = {}) {
      spec.rest = { name: o.name ?? "arg", required: o.required ?? 0 };
    },
    addProxy(o: { required?: number } = {}) {
      spec.rest = { name: "arg", required: o.required ?? 0 };
    },
  };
  const instance = new (commandClass as unknown as new () => Record<string, unknown>)();
  for (const key of Object.keys(instance)) {
    const value = instance[key] as (OptionDescriptor & Record<symbol, unknown>) | undefined;
    if (typeof value === "object" && value !== null && value[Command.isOption]) value.definition(recorder, key);
  }
  return spec;
}

/** The option's long name (`--model`), or its only name. */
export function longName(o: OptionSpec): string {
  return o.names.find((n) => n.startsWith("--")) ?? o.names[0]!;
}

/**
 * The name of the value an option takes, as help shows it (`<duration>`): named once here (or in a
 * kind's contract, for its flags) for the options whose own name does not say it, else the last word
 * of the option's name (`--region` → `region`, `--instance-type` → `type`, `--credential-file` → `file`).
 */
export function valueName(o: OptionSpec): string {
  const long = longName(o);
  const named = VALUE_NAMES[long] ?? KIND_VALUE_NAMES.get(long);
  if (named) return named;
  const words = long.replace(/^-+/, "").split("-");
  return words[words.length - 1]!;
}

const VALUE_NAMES: Record<string, string> = {
  "--controller": "name",
  "--model": "name",
  "--credential": "name",
  "--profile": "name",
  "--user": "name",
  "--ssh-user": "name",
  "--namespace": "name",
  "--context": "name",
  "--kube-context": "name",
  "--timeout": "duration",
  "--replace-after": "duration",
  "--wait": "duration",
  "--agent-wait": "duration",
  "--update-status-interval": "duration",
  "-n": "n",
  "--num-units": "n",
  "--replicas": "n",
  "--count": "n",
  "--lines": "n",
  "--limit": "n",
  "--max-replacements-per-hour": "n",
  "--output": "file",
  "--kubeconfig": "file",
  "--path": "dir",
  "--key-env": "var",
  "--passphrase-env": "var",
  "--host-key": "fingerprint",
  "--jump-host-key": "fingerprint",
  "--jump": "user@host[:port]",
  "--config": "key=value",
  "--reset": "key",
  "--to": "list",
  "--host": "address",
  "--include": "entity",
  "--exclude": "entity",
  "--via-migration": "controller",
};

/** The kinds' flags' value names, from their contracts. */
const KIND_VALUE_NAMES = new Map<string, string>(
  KIND_CONTRACTS.flatMap((c) => (c.cli?.flags ?? []).flatMap((f) => (f.value ? [[f.name, f.value] as const] : []))),
);

/** `-m, --model <name>` (a flag: just its names). */
export function optionDefinition(o: OptionSpec): string {
  const names = [...o.names].sort((a, b) => a.length - b.length).join(", ");
  return o.arity === 0 ? names : `${names}${` <${valueName(o)}>`.repeat(o.arity)}`;
}

/** `<operator-dir> [application]`, `[application|unit|machine...]`, `<words>...` (at least one): the positional part of a synopsis. */
export function positionalSynopsis(spec: CommandSpec): string {
  const parts = spec.positionals.map((p) => (p.required ? `<${p.name}>` : `[${p.name}]`));
  if (spec.rest) parts.push(spec.rest.required > 0 ? `<${spec.rest.name}>...` : `[${spec.rest.name}...]`);
  return parts.join(" ");
}

/** `steward deploy [options] <operator-dir> [application]` (required options are spelled out). */
export function synopsis(name: string, spec: CommandSpec): string {
  const visible = spec.options.filter((o) => !o.hidden);
  const required = visible.filter((o) => o.required).map((o) => optionDefinition(o).replace(/^-\w, /, ""));
  const optional = visible.some((o) => !o.required) ? ["[options]"] : [];
  return ["steward", name, ...optional, ...required, positionalSynopsis(spec)].filter(Boolean).join(" ");
}
