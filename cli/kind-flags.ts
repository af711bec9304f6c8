/**
 * Each substrate kind's command-line flags, made from its contract's `cli` (api/substrate-kinds.ts):
 * the clipanion options, whether any was given, the settings they fill, the refusal of another
 * kind's flags ("--region, --image … are for aws:REGION") and the bootstrap target word
 * (`aws:eu-west-1` in `--region`'s place). A kind's flag is written once, in its contract; no
 * command lists them.
 */
import { Option, UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { KindFlag, ModelSubstrate, SubstrateContract } from "../api/core";
import { MODEL_SUBSTRATES, SUBSTRATE_CONTRACTS, listed } from "../api/core";

type Contract = SubstrateContract<any>;

/**
 * Which of a kind's flags a command takes: those that fill its settings (add-model, set-replica-cloud,
 * a bootstrap on it), or those only a bootstrap on it takes (its controller's hosting).
 */
export type FlagScope = "settings" | "hosting";

/** Every kind's contract, in {@link MODEL_SUBSTRATES} order. */
export const KIND_CONTRACTS: readonly Contract[] = MODEL_SUBSTRATES.map((k) => SUBSTRATE_CONTRACTS[k]);

/** The flags of `c` in `scope`. */
export function flagsOf(c: Contract, scope: FlagScope): readonly KindFlag[] {
  return (c.cli?.flags ?? []).filter((f) => (scope === "hosting") === (f.bootstrapOnly === true));
}

/** The clipanion options of every kind's flags in `scope`, keyed by flag name ("aws: the region, e.g. eu-west-1"). */
export function kindOptions(
  scope: FlagScope,
  contracts: readonly Contract[] = KIND_CONTRACTS,
): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const c of contracts)
    for (const f of flagsOf(c, scope)) {
      if (f.name in options) throw new Error(`${f.name} is a flag of two kinds`);
      const description = `${c.name}: ${f.description}`;
      options[f.name] = f.list ? Option.Array(f.name, [], { description }) : Option.String(f.name, { description });
    }
  return options;
}

/**
 * Defines the kinds' flags of `scope` on `command` and returns their reader. Clipanion finds options
 * as the instance's enumerable properties (Cli.register walks `for (const key in command)`, help
 * reads `Object.keys`), so call it from a field initializer: the options are listed in `--help`
 * where that field is declared.
 */
export function kindFlags(
  command: object,
  scope: FlagScope,
  contracts: readonly Contract[] = KIND_CONTRACTS,
): KindFlags {
  Object.assign(command, kindOptions(scope, contracts));
  return new KindFlags(command as Record<string, unknown>, contracts);
}

/** A value given on the command line: a non-empty string or list, a true switch. */
const present = (v: unknown): boolean => v !== undefined && v !== false && v !== "" && !(Array.isArray(v) && !v.length);

/** What the command was given of the kinds' flags (all the kinds' flags it defines, whatever their scope). */
export class KindFlags {
  /** Flags filled by a target word (`aws:eu-west-1` → `--region`), over the command line's. */
  private readonly filled = new Map<string, string>();

  constructor(
    private readonly command: Record<string, unknown>,
    readonly contracts: readonly Contract[],
  ) {}

  /** `c`'s flags this command takes. */
  flagsHere(c: Contract): readonly KindFlag[] {
    return (c.cli?.flags ?? []).filter((f) => f.name in this.command);
  }

  /** A flag's value: a string, a list (repeatable flags), or undefined. */
  value(name: string): unknown {
    return this.filled.get(name) ?? this.command[name];
  }

  /** Whether any of `c`'s flags was given. */
  given(c: Contract): boolean {
    return this.flagsHere(c).some((f) => {
      const v = this.command[f.name];
      return v !== undefined && !(Array.isArray(v) && !v.length);
    });
  }

  /**
   * "--region, --image … are for OWNER" when flags of a kind other than `kind` were given; the owner is
   * the kind's name (add-model), or its target (bootstrap: `aws:REGION`).
   */
  foreignProblem(kind: ModelSubstrate | undefined, owner: (c: Contract) => string = (c) => c.name): string | undefined {
    const other = this.contracts.find((c) => c.name !== kind && this.given(c));
    return other && `${listed(this.flagsHere(other).map((f) => f.name))} are for ${owner(other)}`;
  }

  /**
   * The settings `c`'s flags fill (a file flag's file read from `cwd`), refused when a required one is
   * missing ("aws needs --region and --image (an AMI id …)"); the controller, or the bootstrap,
   * checks their values and says which one is wrong.
   */
  async settings(c: Contract, cwd: string): Promise<Record<string, unknown>> {
    const flags = this.flagsHere(c);
    const required = flags.filter((f) => f.required);
    if (required.some((f) => !present(this.value(f.name))))
      throw new UsageError(
        `${c.name} needs ${listed(required.map((f) => (typeof f.required === "string" ? `${f.name} (${f.required})` : f.name)))}`,
      );
    const settings: Record<string, unknown> = {};
    for (const f of flags) {
      const v = this.value(f.name);
      if (present(v)) settings[f.setting] = f.file ? await readText(cwd, v as string) : v;
    }
    return settings;
  }

  /**
   * What follows the colon of `target` (`aws:eu-west-1`), put in the place of the flag the kind's
   * target fills (normalised: `vsphere:vc.example.com` → `https://vc.example.com/sdk`); when that flag
   * is given too, the two must agree.
   */
  fillFromTarget(c: Contract, target: string): string {
    const fills = c.cli?.target?.fills;
    if (!fills) throw new Error(`${c.name}: its target fills no flag`);
    const given = target.slice(target.indexOf(":") + 1);
    const flag = this.value(fills.flag) as string | undefined;
    if (!given && !flag) throw new UsageError(`give ${fills.what}: ${fills.example}`);
    const value = !given ? flag! : fills.normalise ? fills.normalise(given) : given;
    if (given && flag && value !== flag)
      throw new UsageError(
        `${fills.what} is given twice and differs: ${target}${fills.normalise ? ` (${value})` : ""} and ${fills.flag} ${flag}`,
      );
    this.filled.set(fills.flag, value);
    return value;
  }
}

/** The kind a bootstrap target names (`aws:eu-west-1`, `k8s:prod`: its word or an alias, then a colon), or undefined. */
export function kindOfTarget(
  word: string | undefined,
  contracts: readonly Contract[] = KIND_CONTRACTS,
): Contract | undefined {
  if (word === undefined) return undefined;
  return contracts.find((c) => {
    const t = c.cli?.target;
    return t !== undefined && [t.word, ...(t.aliases ?? [])].some((w) => word.startsWith(`${w}:`));
  });
}

/** How messages name a kind's target: `aws:REGION` (its name, for a kind without one). */
export function targetName(c: Contract): string {
  const t = c.cli?.target;
  return t ? `${t.word}:${t.placeholder}` : c.name;
}

function readText(cwd: string, file: string): Promise<string> {
  return readFile(resolve(cwd, file), "utf8").catch(() => {
    throw new UsageError(`cannot read ${file}`);
  });
}
