/**
 * `steward` with no arguments: a console in which every command runs without typing `steward`.
 * On a terminal it keeps history across sessions ($STEWARD_HOME/console-history), completes with
 * tab (commands, options, models, applications, units), splits words as a shell does, and `use
 * MODEL` picks a model for this console only (the controller's current model is left alone). Each
 * command runs as its own process, exactly as from a shell: Ctrl-C cancels it and the console stays.
 * With input from a pipe it runs each line in turn and exits 1 if any failed. Behind the dashboard's
 * console pane it runs on pipes as a terminal (web-terminal.ts) and, restricted, runs only what
 * talks to the controller (restricted.ts).
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import { sanitizeForTerminal } from "../../api/core";
import { loadClientConfig, stewardHome } from "../client-config";
import { COMMAND_NAMES } from "../command-names";
import { didYouMean, nearest } from "../usage-problem";
import { completeWords } from "./completion";
import { carriesSecretValues } from "../secret-values";
import { restrictedRefusal } from "./restricted";
import { ControllerSources } from "./sources";
import type { WebTerminal } from "./web-terminal";
import { lineWords, splitWords } from "./words";

export interface ConsoleOptions {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => void };
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * The CLI's entry, run for each command (main.ts passes its own file: inside a bundle, files
   * beside this one do not exist). @default main.js beside this folder (the unbundled build)
   */
  cliMain?: string;
  /** Keys and screen are pipes to the web console: a terminal all the same. */
  terminal?: WebTerminal;
  /** Only commands that talk to the controller (the web console on a controller host). */
  restricted?: boolean;
}

const HISTORY_FILE = "console-history";
const HISTORY_SIZE = 1000;

export async function runConsole(o: ConsoleOptions): Promise<number> {
  return new Console(o).run();
}

class Console {
  /** The model chosen with `use` (this console only). */
  private model?: string;
  private failed = false;
  private historyToSave?: string[];
  private savingHistory = false;
  private readonly home: string;
  private readonly sources: ControllerSources;
  private readonly interactive: boolean;

  constructor(private readonly o: ConsoleOptions) {
    this.home = stewardHome(o.env);
    this.sources = new ControllerSources(this.home, o.env, () => this.model);
    this.interactive = o.terminal !== undefined || o.stdin.isTTY === true;
  }

  async run(): Promise<number> {
    const history = this.interactive ? await this.loadHistory() : [];
    const rl = readline.createInterface({
      input: this.o.terminal?.input ?? this.o.stdin,
      output: this.o.stdout,
      terminal: this.interactive,
      history,
      historySize: HISTORY_SIZE,
      removeHistoryDuplicates: true,
      completer: (line: string, done: (err: Error | null, result: [string[], string]) => void) => {
        const s = splitWords(line);
        const current = s.last ?? "";
        completeWords(s.words, current, this.sources, true).then(
          (c) => done(null, [c.map((x) => x + " "), current]),
          () => done(null, [[], current]),
        );
      },
    });
    // Lines typed before the first prompt (a browser's keys arrive as soon as the socket opens)
    // are emitted at once: the iterator must exist before anything is awaited, or they are lost.
    const lines = rl[Symbol.asyncIterator]();
    if (this.interactive) {
      rl.on("history", (h: string[]) => this.historyChanged(h));
      // At the prompt Ctrl-C drops the line typed so far, as a shell does; Ctrl-D (or exit) leaves.
      rl.on("SIGINT", () => {
        this.o.stdout.write("^C\n");
        rl.write(null, { ctrl: true, name: "u" });
        void this.prompt(rl);
      });
      // Without a listener readline stops the whole process on Ctrl-Z, and in the web console nothing could continue it.
      if (this.o.terminal) rl.on("SIGTSTP", () => undefined);
      this.o.stdout.write(
        "Steward console: type commands without `steward` (help lists them); `use MODEL` picks a model for this console;\ntab completes; Ctrl-C cancels a running command; Ctrl-D or exit leaves.\n",
      );
      await this.prompt(rl);
    }
    for (let next = await lines.next(); !next.done; next = await lines.next()) {
      if (!(await this.handle(next.value, rl))) break;
      if (this.interactive) await this.prompt(rl);
    }
    rl.close();
    if (this.interactive) this.o.stdout.write("\n");
    return this.failed ? 1 : 0;
  }

  /** Runs one line; false when the console should end. */
  private async handle(line: string, rl: readline.Interface): Promise<boolean> {
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return true;
    const parsed = lineWords(line);
    if ("error" in parsed) {
      this.error(parsed.error);
      return true;
    }
    let words = parsed.words;
    if (words[0] === "steward") words = words.slice(1); // a habit from the shell
    const [command, ...rest] = words;
    if (command === undefined) return true;
    if (command === "exit" || command === "quit") return false;
    if (command === "use") {
      await this.use(rest);
      return true;
    }
    if (!(COMMAND_NAMES as readonly string[]).includes(command)) {
      const near = didYouMean(nearest(command, [...COMMAND_NAMES, "use", "exit"]));
      this.error(`unknown command "${command}".${near} help lists the commands (and use, exit in this console)`);
      return true;
    }
    const refused = this.o.restricted ? restrictedRefusal(words) : undefined;
    if (refused) {
      this.error(refused);
      return true;
    }
    const code = await this.runCommand(words, rl);
    if (code !== 0) this.failed = true;
    return true;
  }

  private async use(args: string[]): Promise<void> {
    if (args.length === 0) {
      const current = await this.currentModel();
      this.o.stdout.write(
        this.model
          ? `using model ${this.model} (this console)\n`
          : `using the controller's current model${current ? ` (${current})` : ""}\n`,
      );
      return;
    }
    if (args.length > 1) {
      this.error("use takes one model name");
      return;
    }
    const models = await this.sources.models().catch((err: unknown) => {
      this.error(`cannot list models: ${(err as Error).message}`);
      return undefined;
    });
    if (!models) return;
    if (!models.includes(args[0]!)) {
      this.error(`model "${args[0]}" does not exist (models: ${models.join(", ") || "none"})`);
      return;
    }
    this.model = args[0];
    this.o.stdout.write(`using model ${this.model} in this console\n`);
  }

  /**
   * Runs `steward WORDS` as its own process. On a terminal it gets the terminal, in its normal
   * (cooked) mode so that Ctrl-C reaches it as SIGINT; the console ignores that signal meanwhile.
   * In the web console it gets no input (the keys are the console's: Ctrl-C is passed on as SIGINT).
   */
  private async runCommand(words: string[], rl: readline.Interface): Promise<number> {
    const main = this.o.cliMain ?? join(__dirname, "..", "main.js");
    // The web console's pipes end in a terminal (xterm.js): commands colour their output there too.
    const env = {
      ...this.o.env,
      ...(this.model ? { STEWARD_MODEL: this.model } : {}),
      ...(this.o.terminal && !this.o.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}),
    };
    const ownStreams = this.o.stdout === process.stdout && this.o.stderr === process.stderr;
    const tty = this.interactive && !this.o.terminal;
    const ignore = (): void => undefined;
    if (tty) {
      rl.pause();
      this.o.stdin.setRawMode?.(false);
      process.on("SIGINT", ignore);
    }
    try {
      const child = spawn(process.execPath, [main, ...words], {
        cwd: this.o.cwd,
        env,
        stdio: ownStreams ? [tty ? "inherit" : "ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"],
      });
      this.o.terminal?.commandStarted(child);
      if (!ownStreams) {
        child.stdout?.pipe(this.o.stdout, { end: false });
        child.stderr?.pipe(this.o.stderr, { end: false });
      }
      const outputDone = ownStreams ? Promise.resolve() : Promise.all([ended(child.stdout), ended(child.stderr)]);
      const code = await new Promise<number>((resolve) => {
        child.once("error", (err) => {
          this.error(`could not run the command: ${err.message}`);
          resolve(1);
        });
        child.once("exit", (c, signal) => resolve(c ?? (signal === "SIGINT" ? 130 : 1)));
      });
      await outputDone;
      if (code === 130 && this.interactive) this.o.stdout.write("\n(cancelled)\n");
      return code;
    } finally {
      this.o.terminal?.commandEnded();
      if (tty) {
        process.off("SIGINT", ignore);
        this.o.stdin.setRawMode?.(true);
        rl.resume();
      }
    }
  }

  private async prompt(rl: readline.Interface): Promise<void> {
    const cfg = await loadClientConfig(this.home).catch(() => undefined);
    const controller = this.o.env.STEWARD_CONTROLLER ?? cfg?.current;
    const model = this.model ?? (controller ? cfg?.controllers[controller]?.currentModel : undefined);
    rl.setPrompt(
      sanitizeForTerminal(`steward ${controller ?? "(no controller)"}${model ? `:${model}` : ""}> `, {
        keepNewlines: false,
      }),
    );
    rl.prompt();
  }

  private async currentModel(): Promise<string | undefined> {
    const cfg = await loadClientConfig(this.home).catch(() => undefined);
    const controller = this.o.env.STEWARD_CONTROLLER ?? cfg?.current;
    return controller ? cfg?.controllers[controller]?.currentModel : undefined;
  }

  private error(message: string): void {
    this.failed = true;
    this.o.stderr.write(`ERROR ${message}\n`);
  }

  /** The saved history, newest first (as readline keeps it). */
  private async loadHistory(): Promise<string[]> {
    const text = await readFile(join(this.home, HISTORY_FILE), "utf8").catch(() => "");
    return text.split("\n").filter(Boolean).reverse().slice(0, HISTORY_SIZE);
  }

  /**
   * One save at a time, of the newest history: a paste of thousands of lines would otherwise start
   * a write of the whole history per line (hundreds of MB held at once).
   */
  private historyChanged(newestFirst: string[]): void {
    this.historyToSave = [...newestFirst];
    if (this.savingHistory) return;
    this.savingHistory = true;
    void (async () => {
      for (let h = this.historyToSave; h; h = this.historyToSave) {
        this.historyToSave = undefined;
        await this.saveHistory(h);
      }
      this.savingHistory = false;
    })();
  }

  private async saveHistory(newestFirst: string[]): Promise<void> {
    const path = join(this.home, HISTORY_FILE);
    await mkdir(this.home, { recursive: true, mode: 0o700 }).catch(() => undefined);
    // A line that gave a secret's values on its command line is not written down.
    const kept = newestFirst.filter((line) => !carriesSecretValues(line));
    await writeFile(path, [...kept].reverse().join("\n") + "\n", { mode: 0o600 }).catch(() => undefined);
    await chmod(path, 0o600).catch(() => undefined);
  }
}

function ended(stream: Readable | null): Promise<void> {
  return new Promise((resolve) => {
    if (!stream) resolve();
    else stream.once("end", () => resolve()).once("error", () => resolve());
  });
}
