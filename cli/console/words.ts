/**
 * Splitting a console line into words as a POSIX shell does for plain words: single quotes keep
 * everything, double quotes keep all but `\"` and `\\`, a backslash outside quotes escapes the next
 * character. No expansion of any kind (`$`, `*`, `~` stay as typed).
 */

export interface SplitLine {
  /** The words before the last one. */
  words: string[];
  /** The word at the end of the line, unquoted; absent when the line ends with a space (or is empty). */
  last?: string;
  /** Whether the line ends inside quotes (a complete line then is an error). */
  unclosed?: "'" | '"';
}

export function splitWords(line: string): SplitLine {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === "\\" && (line[i + 1] === '"' || line[i + 1] === "\\")) word += line[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) {
        words.push(word);
        word = "";
        inWord = false;
      }
    } else {
      word += c;
      inWord = true;
    }
  }
  return { words, ...(inWord || quote ? { last: word } : {}), ...(quote ? { unclosed: quote } : {}) };
}

/** `words` for a complete line, or why it is not one. */
export function lineWords(line: string): { words: string[] } | { error: string } {
  const s = splitWords(line);
  if (s.unclosed)
    return { error: `the line ends inside ${s.unclosed === "'" ? "single" : "double"} quotes: close them` };
  return { words: s.last === undefined ? s.words : [...s.words, s.last] };
}
