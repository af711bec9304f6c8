/**
 * The flags that say where a model's or a replica cloud's machines go, shared by `add-model` and
 * `set-replica-cloud` (each kind's, made from its contract by ./kind-flags.ts); and `--constraints`,
 * what those machines must have (add-model, deploy, add-machine).
 */
import { Option, UsageError } from "clipanion";
import type { ModelSubstrate } from "../api/core";
import { StewardError, contractOf, formatConstraints, parseConstraints } from "../api/core";
import type { BaseCommand } from "./base-command";
import { ControllerCommand } from "./base-command";
import { kindFlags } from "./kind-flags";

type CommandClass = abstract new (...args: any[]) => BaseCommand;

/** Constraints given as arguments (`cores=2 mem=4G`, one or several words) in their normal form; none given is undefined. */
export function constraintsArgument(words: readonly string[]): string | undefined {
  if (words.length === 0) return undefined;
  const text = formatConstraints(checked(words.join(" "), "constraints"));
  if (!text) throw new UsageError("no constraints given: give key=value pairs such as cores=2 mem=4G, or --clear");
  return text;
}

function checked(text: string, what: string): ReturnType<typeof parseConstraints> {
  try {
    return parseConstraints(text);
  } catch (err) {
    if (StewardError.isInstance(err)) throw new UsageError(`${what}: ${err.message.replace(/^constraints: /, "")}`);
    throw err;
  }
}

/** Adds `--constraints "cores=2 mem=4G"` (Juju's syntax) to a command class. */
export function withConstraintsFlag<B extends CommandClass>(Base: B) {
  abstract class WithConstraintsFlag extends Base {
    constraints = Option.String("--constraints", {
      description:
        'What its machines must have, as Juju writes it: "cores=2 mem=4G root-disk=20G arch=amd64" or "instance-type=t3.large"',
    });

    /** The constraints in their normal form, checked here first (the controller checks them again, against the model's cloud). */
    constraintsText(): string | undefined {
      if (this.constraints === undefined) return undefined;
      return formatConstraints(checked(this.constraints, "--constraints")) || undefined;
    }
  }
  return WithConstraintsFlag;
}

/**
 * A command that takes every kind's settings flags (`--region`, `--vcenter`, … as the kinds'
 * contracts list them: ./kind-flags.ts) and makes a kind's settings from them.
 */
export abstract class CloudOptionsCommand extends ControllerCommand {
  readonly substrateFlags = kindFlags(this, "settings");

  /** Refuses flags for a kind other than `substrate`. */
  protected checkCloudFlags(substrate: ModelSubstrate | undefined): void {
    const problem = this.substrateFlags.foreignProblem(substrate);
    if (problem) throw new UsageError(problem);
  }

  /** The settings of `substrate` read from its flags; undefined for kinds without flags here. */
  protected async settingsFromFlags(
    substrate: ModelSubstrate | undefined,
  ): Promise<Record<string, unknown> | undefined> {
    const kind = substrate && contractOf(substrate);
    if (!kind || this.substrateFlags.flagsHere(kind).length === 0) return undefined;
    return this.substrateFlags.settings(kind, this.context.cwd);
  }
}
