/**
 * Clipanion's Cli with Steward's help and usage errors: help is rendered from the commands'
 * declarations with each option's value named (help-text.ts), and a command line that does not
 * parse gets one sentence saying what is wrong (usage-problem.ts) and where to read more, on
 * standard error, instead of clipanion's "Command not found" and every signature it knows.
 */
import { Cli, UsageError } from "clipanion";
import type { BaseContext, Command, CommandClass } from "clipanion";
import { commandSpec, synopsis } from "./command-spec";
import { commandHelp, commandList } from "./help-text";
import { didYouMean, nearest, usageProblem } from "./usage-problem";

/** The first line of a usage error, then where to read more; names are `steward`'s command names. */
export function usageErrorText(message: string, command?: string, usage?: string): string {
  let out = `ERROR ${message}\n`;
  if (usage) out += `Usage: ${usage}\n`;
  // A message that already says what to run needs no pointer.
  if (command && !/\bsteward [a-z]/.test(message))
    out += `See "steward help ${command}" for its options and examples.\n`;
  return out;
}

/** `ERROR unknown command "statsu". Did you mean status?`, and where the list is. */
export function unknownCommandText(word: string, names: readonly string[]): string {
  return `ERROR unknown command "${word}".${didYouMean(nearest(word, names))}\n"steward help" lists the commands.\n`;
}

export class StewardCli<Context extends BaseContext> extends Cli<Context> {
  private readonly entries: { name: string; commandClass: CommandClass<Context> }[] = [];

  constructor(
    opts: ConstructorParameters<typeof Cli>[0],
    private readonly commandNames: readonly string[],
  ) {
    super(opts);
  }

  override register(commandClass: CommandClass<Context>): void {
    super.register(commandClass);
    const name = commandClass.paths?.[0]?.[0];
    if (name && this.commandNames.includes(name)) this.entries.push({ name, commandClass });
  }

  override usage(
    command: CommandClass<Context> | Command<Context> | null = null,
    opts: { colored?: boolean; detailed?: boolean; prefix?: string } = {},
  ): string {
    const format = this.format(opts.colored);
    const commandClass =
      command === null
        ? undefined
        : typeof command === "function"
          ? command
          : (command.constructor as CommandClass<Context>);
    const entry = this.entries.find((e) => e.commandClass === commandClass);
    if (!entry) return commandList(this.entries as never, this.binaryVersion ?? "", format);
    return commandHelp(entry.name, entry.commandClass as never, format);
  }

  override async run(input: Command<Context> | string[], context?: unknown): Promise<number> {
    if (!Array.isArray(input)) return super.run(input, context as never);
    const ctx = { ...Cli.defaultContext, ...(context as Partial<Context>) } as unknown as Context;
    let command: Command<Context>;
    try {
      command = this.process(input, ctx);
    } catch (err) {
      if (!(err instanceof Error) || !("clipanion" in err)) throw err;
      ctx.stderr.write(this.problem(err, input));
      return 1;
    }
    return super.run(command, context as never);
  }

  /** A command line clipanion could not read (or whose option values its validators refused), explained. */
  private problem(err: Error, input: string[]): string {
    const [word] = input;
    const entry = this.entries.find((e) => e.name === word);
    if (!entry) {
      return word === undefined || word.startsWith("-")
        ? usageErrorText(`unknown option ${word ?? ""}`.trim(), undefined) + `"steward help" lists the commands.\n`
        : unknownCommandText(word, this.commandNames);
    }
    const spec = commandSpec(entry.commandClass as never);
    const message =
      err instanceof UsageError
        ? err.message.replace(/^Invalid value/, "invalid value")
        : (usageProblem(spec, input.slice(1)) ?? firstReason(err));
    return usageErrorText(message, entry.name, synopsis(entry.name, spec));
  }
}

/** The parser's own reason ("Extraneous positional argument ("x")."), without the signatures it lists after it. */
function firstReason(err: Error): string {
  const reason = (err as { candidates?: { reason: string | null }[] }).candidates?.find((c) => c.reason)?.reason;
  return (reason ?? "these arguments do not fit the command").replace(/\.$/, "").replace(/^./, (c) => c.toLowerCase());
}
