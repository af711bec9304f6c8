/**
 * The documentation holds to the code: every relative link in README.md and docs/*.md reaches a file
 * (and a heading, for `#anchors`, slugged as GitHub does), every `steward …` command shown in a shell
 * block parses as the CLI parses it (a command that exists, options it takes with their values, its
 * arguments), and every `npm run …` names a script of package.json. Commands are parsed by the CLI's
 * own parser, built from its command table in this process (no process per command), so commands
 * added or renamed in the code are followed without editing this test. The checks are plain
 * functions, and the last test feeds them broken text to show each one can fail.
 */
import test from "ava";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import type { Cli } from "clipanion";
import type { StewardContext } from "../cli";
import { buildCli } from "../cli";

const repo = join(__dirname, "..", "..");

/** The pages checked: the README and every page of docs/. */
function pages(): string[] {
  const docs = join(repo, "docs");
  return [
    join(repo, "README.md"),
    ...readdirSync(docs)
      .filter((f) => f.endsWith(".md"))
      .map((f) => join(docs, f)),
  ];
}

/** The text outside fenced code blocks (links and headings live there). */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "");
}

/** Each fenced block, with its info string (`sh`, `ts`, …). */
function fencedBlocks(markdown: string): { lang: string; body: string }[] {
  const blocks: { lang: string; body: string }[] = [];
  const re = /^(```|~~~)([^\n]*)\n([\s\S]*?)^\1[ \t]*$/gm;
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) blocks.push({ lang: m[2]!.trim(), body: m[3]! });
  return blocks;
}

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(markdown).split("\n")) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const text = h[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .replace(/[`*_~]/g, "");
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links of a page that do not resolve: files that do not exist, anchors no heading makes. */
function brokenLinks(file: string, markdown: string, read: (path: string) => string | undefined): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, "");
  const broken: string[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path, anchor] = target.split("#", 2) as [string, string | undefined];
    const goal = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
    const content = read(goal);
    if (content === undefined) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor && goal.endsWith(".md") && !anchors(content).has(anchor.toLowerCase()))
      broken.push(`${target}: no heading makes #${anchor}`);
  }
  return broken;
}

/** A shell line split into words as a shell would (quotes kept together, comments dropped). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(#.*$)|([^\s"']+))/gy;
  let word: string | undefined;
  for (let m = re.exec(line); m && m[0] !== ""; m = re.exec(line)) {
    if (m[3] !== undefined) break;
    const part = m[1] ?? m[2] ?? m[4] ?? "";
    const joined = m[0].length > 0 && !/^\s/.test(m[0]) && word !== undefined;
    if (joined) word += part;
    else {
      if (word !== undefined) words.push(word);
      word = part;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

const SHELL = new Set(["", "sh", "bash", "shell", "console", "zsh"]);
const SEPARATORS = new Set(["|", "||", "&&", ";", "&"]);

/** The commands of the shell blocks of a page: each `steward …` and `npm run …` with its words. */
function shownCommands(markdown: string): { tool: "steward" | "npm"; words: string[]; line: string }[] {
  const found: { tool: "steward" | "npm"; words: string[]; line: string }[] = [];
  for (const block of fencedBlocks(markdown)) {
    if (!SHELL.has(block.lang)) continue;
    const lines = block.body.replace(/\\\n/g, " ").split("\n");
    for (const line of lines) {
      const words = shellWords(line.replace(/^\$\s+/, ""));
      for (let i = 0; i < words.length; i++) {
        const before = words[i - 1];
        const starts = before === undefined || before === "npx" || SEPARATORS.has(before) || /^[A-Z_]+=/.test(before);
        if (!starts || (words[i] !== "steward" && words[i] !== "npm")) continue;
        let end = i + 1;
        while (end < words.length && !SEPARATORS.has(words[end]!) && !/^\d?[<>]/.test(words[end]!)) end++;
        const tool = words[i] as "steward" | "npm";
        if (tool === "npm" && words[i + 1] !== "run") continue;
        found.push({ tool, words: words.slice(i + 1, end), line: line.trim() });
        i = end - 1;
      }
    }
  }
  return found;
}

/**
 * What is wrong with each shown command, by the CLI's own parser (clipanion's `process`, which parses
 * without running): an unknown command, an option it does not take or that lacks its value, too few or
 * too many arguments. Optional parts shown in brackets (`[--folder F]`) are parsed as given. An npm
 * command must name a script of package.json.
 */
function badCommands(
  shown: { tool: "steward" | "npm"; words: string[]; line: string }[],
  cli: Cli<StewardContext>,
  scripts: Set<string>,
): string[] {
  const bad: string[] = [];
  for (const { tool, words, line } of shown) {
    if (tool === "npm") {
      const script = words[1];
      if (!script || !scripts.has(script)) bad.push(`${line}: package.json has no script "${script}"`);
      continue;
    }
    const args = words.map((w) => w.replace(/^\[+|\]+$/g, "")).filter((w) => w !== "");
    if (args.length === 0) continue; // the console
    try {
      cli.process(args, {} as never); // parses only: nothing runs, so no context is read
    } catch (err) {
      bad.push(`${line}: ${String((err as Error).message).split("\n")[0]}`);
    }
  }
  return bad;
}

function readIfFile(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  return statSync(path).isDirectory() ? "" : readFileSync(path, "utf8");
}

test("every relative link in README.md and docs/*.md resolves, anchors included", (t) => {
  const broken = pages().flatMap((file) =>
    brokenLinks(file, readFileSync(file, "utf8"), readIfFile).map((b) => `${relative(repo, file)}: ${b}`),
  );
  t.deepEqual(broken, []);
});

test("every steward command shown parses as the CLI parses it (command, options, arguments); every npm script exists", (t) => {
  const cli = buildCli();
  const scripts = new Set(Object.keys(JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).scripts));
  let count = 0;
  const bad = pages().flatMap((file) => {
    const shown = shownCommands(readFileSync(file, "utf8"));
    count += shown.length;
    return badCommands(shown, cli, scripts).map((b) => `${relative(repo, file)}: ${b}`);
  });
  t.deepEqual(bad, []);
  t.true(count > 100, `the pages show commands (${count} found)`);
});

test("the README opens with the two commands, and stays short", (t) => {
  const readme = readFileSync(join(repo, "README.md"), "utf8");
  const first = fencedBlocks(readme)[0]!;
  t.deepEqual(
    first.body
      .trim()
      .split("\n")
      .map((l) => l.replace(/\s+#.*$/, "").trim()),
    ["npm ci && npm run demo", "npm test"],
  );
  t.true(readme.split("\n").length <= 250, "README.md is at most 250 lines");
  t.false(readme.includes("shared/DESIGN.md"), "no path outside the repository");
});

test("npx steward, as the README shows it, runs the built CLI: its bin is executable and starts with node's shebang", (t) => {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { bin: Record<string, string> };
  const bin = join(repo, pkg.bin.steward!);
  // npm exec runs a project's own bin through the shell: without the execute bit a fresh clone gets "Permission denied".
  t.not(statSync(bin).mode & 0o111, 0, `${pkg.bin.steward} is executable after npm run build`);
  t.true(readFileSync(bin, "utf8").startsWith("#!/usr/bin/env node\n"));
});

test("every page of docs/ opens with its title and is linked from the README", (t) => {
  const readme = readFileSync(join(repo, "README.md"), "utf8");
  for (const file of pages().slice(1)) {
    const page = relative(repo, file);
    t.regex(readFileSync(file, "utf8"), /^# \S/, `${page} opens with a title`);
    t.true(readme.includes(`](${page})`) || readme.includes(`](${page}#`), `the README links ${page}`);
  }
});

test("the checks fail on broken text", (t) => {
  const file = join(repo, "docs", "example.md");
  const page =
    "# A page\n\n## Its part\n\n[ok](#its-part) [gone](#nowhere) [file](missing.md) [web](https://example.com)\n";
  const files = (p: string): string | undefined => (p === file ? page : undefined);
  t.deepEqual(brokenLinks(file, page, files), ["#nowhere: no heading makes #nowhere", "missing.md: no such file"]);
  t.deepEqual(
    [...anchors("# Users and access\n## Users and access\n## `steward run` (actions)\n")],
    ["users-and-access", "users-and-access-1", "steward-run-actions"],
  );
  const shown = shownCommands(
    "```sh\nsteward statsu -m x\necho pw | steward add-user bob --colour red\nsteward grant alice read\n" +
      "steward status --format\nnpm run nothing\nsteward status --format=json web   # fine\n" +
      "steward add-model shop --substrate ssh [--namespace shop]   # fine\n```\n",
  );
  const flagged = badCommands(shown, buildCli(), new Set(["build"])).map((b) => b.split(": ")[0]);
  t.deepEqual(flagged, [
    "steward statsu -m x",
    "echo pw | steward add-user bob --colour red",
    "steward grant alice read",
    "steward status --format",
    "npm run nothing",
  ]);
});
