/**
 * `steward help` and `steward CMD --help`, rendered from the commands' own declarations
 * (command-spec.ts): clipanion's renderer names every option's value `#0` and lists all of a
 * command's options inline on one line per command, 199 lines for the command list.
 */
import type { ColorFormat, CommandClass } from "clipanion";
import { formatMarkdownish } from "clipanion";
import type { CommandSpec } from "./command-spec";
import { commandSpec, optionDefinition, synopsis } from "./command-spec";

export interface HelpEntry {
  name: string;
  commandClass: CommandClass<never>;
}

const HELP_OPTION = {
  names: ["-h", "--help"],
  arity: 0,
  required: false,
  hidden: false,
  description: "Show this help",
};

/** The list of commands by category, one line each. */
export function commandList(entries: HelpEntry[], version: string, format: ColorFormat): string {
  const byCategory = new Map<string, HelpEntry[]>([["Getting started", []]]);
  for (const e of entries) {
    const category = e.commandClass.usage?.category ?? "Other";
    byCategory.set(category, [...(byCategory.get(category) ?? []), e]);
  }
  const width = Math.max(...entries.map((e) => e.name.length)) + 2;
  let out = `${format.header(`Steward ${version}`)}\n\n`;
  out += `  ${format.bold("steward <command> [options] [arguments]")}   run one command\n`;
  out += `  ${format.bold("steward")}                                    the console: commands without typing steward\n`;
  for (const [category, list] of byCategory) {
    if (list.length === 0) continue;
    out += `\n${format.header(category)}\n`;
    for (const e of list)
      out += `  ${format.bold(e.name.padEnd(width))}${oneLine(e.commandClass.usage?.description ?? "", format)}\n`;
  }
  out += `\nSee ${format.code("steward help COMMAND")} (or ${format.code("steward COMMAND --help")}) for a command's options and examples.\n`;
  return out;
}

/** One command's help: what it does, its synopsis, its options with their values named, details, examples. */
export function commandHelp(name: string, commandClass: CommandClass<never>, format: ColorFormat): string {
  const usage = commandClass.usage ?? {};
  const spec: CommandSpec = commandSpec(commandClass);
  let out = "";
  if (usage.description) out += oneLine(usage.description, format).replace(/^./, (c) => c.toUpperCase()) + "\n\n";
  out += `${format.header("Usage")}\n\n${format.bold(`$ ${synopsis(name, spec)}`)}\n`;
  const options = [...spec.options.filter((o) => !o.hidden), HELP_OPTION];
  const definitions = options.map(optionDefinition);
  const width = Math.max(...definitions.map((d) => d.length)) + 4;
  out += `\n${format.header("Options")}\n\n`;
  options.forEach((o, i) => {
    const required = o.required ? " (required)" : "";
    out += `  ${format.bold(definitions[i]!.padEnd(width))}${oneLine(o.description, format)}${required}\n`;
  });
  if (usage.details)
    out += `\n${format.header("Details")}\n\n${formatMarkdownish(usage.details, { format, paragraphs: true })}`;
  if (usage.examples && usage.examples.length > 0) {
    out += `\n${format.header("Examples")}\n`;
    for (const [label, example] of usage.examples)
      out += `\n${oneLine(label, format)}\n  ${format.bold("$ ")}${example.replace(/\$0/g, "steward")}\n`;
  }
  return out;
}

function oneLine(text: string, format: ColorFormat): string {
  return formatMarkdownish(text, { format, paragraphs: false }).replace(/\n$/, "");
}
