import { Command, Option, UsageError } from "clipanion";
import { BaseCommand } from "../base-command";
import { completeWords } from "../console/completion";
import { ControllerSources } from "../console/sources";

/** The scripts ask `steward completion --words -- <the command line's words up to the cursor>`. */
const SCRIPTS: Record<string, string> = {
  bash: [
    "# steward completion for bash: source this, or put it in /etc/bash_completion.d/steward",
    "_steward() {",
    "  local IFS=$'\\n'",
    '  COMPREPLY=($(steward completion --words -- "${COMP_WORDS[@]:0:COMP_CWORD+1}" 2>/dev/null))',
    "}",
    "complete -o default -F _steward steward",
  ].join("\n"),
  zsh: [
    "#compdef steward",
    "# steward completion for zsh: put it on your $fpath as _steward, or source it after compinit",
    "_steward() {",
    "  local -a candidates",
    '  candidates=("${(@f)$(steward completion --words -- "${(@)words[1,CURRENT]}" 2>/dev/null)}")',
    "  compadd -- $candidates",
    "}",
    "compdef _steward steward",
  ].join("\n"),
  fish: [
    "# steward completion for fish: save as ~/.config/fish/completions/steward.fish",
    "complete -c steward -f -a '(steward completion --words -- (commandline -opc) (commandline -ct))'",
  ].join("\n"),
};

export default class CompletionCommand extends BaseCommand {
  static override paths = [["completion"]];
  static override usage = Command.Usage({
    category: "Console",
    description: "print a shell script that completes steward's commands, options and names",
    details:
      "Completes commands, their options, and the models, controllers, applications and units they take (asking the current controller, for at most 2 s). The console (`steward` with no arguments) completes the same way with tab.",
    examples: [
      ["bash, this shell", "source <(steward completion bash)"],
      ["zsh", 'steward completion zsh > "${fpath[1]}/_steward"'],
      ["fish", "steward completion fish > ~/.config/fish/completions/steward.fish"],
    ],
  });

  words = Option.Boolean("--words", false, {
    description: "Print the candidates for a command line's words instead (what the scripts call)",
  });
  /** The shell; with --words, the command line's words. */
  rest = Option.Rest({ name: "bash|zsh|fish" });

  async run(): Promise<number> {
    if (this.words) {
      // The command line up to the cursor, its program name first; the last word is the one being typed.
      const words = this.rest.slice(1);
      const current = words.pop() ?? "";
      const at = words.findIndex((w) => w === "-m" || w === "--model");
      const model = at >= 0 ? words[at + 1] : this.context.env.STEWARD_MODEL;
      const candidates = await completeWords(
        words,
        current,
        new ControllerSources(this.home, this.context.env, () => model),
        false,
      );
      this.context.stdout.write(candidates.map((c) => `${c}\n`).join(""));
      return 0;
    }
    const [shell, ...extra] = this.rest;
    const script = shell !== undefined && Object.hasOwn(SCRIPTS, shell) ? SCRIPTS[shell] : undefined;
    if (!script || extra.length > 0)
      throw new UsageError(
        `give the shell: bash, zsh or fish${shell !== undefined && !script ? ` (not "${shell}")` : ""}`,
      );
    this.context.stdout.write(script + "\n");
    return 0;
  }
}
