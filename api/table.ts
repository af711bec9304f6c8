/** Plain column tables, as `juju status` prints them: left-aligned, two spaces apart. */
export function table(
  header: string[],
  rows: string[][],
  /** Decorates a body cell after it is sanitised and measured (colour: escape sequences take no width). */
  style?: (cell: string, column: number) => string,
): string {
  const clean = (cells: string[]): string[] => cells.map((c) => sanitizeForTerminal(c ?? "", { keepNewlines: false }));
  const body = rows.map(clean);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[], styled: boolean): string =>
    cells
      .map((c, i) => {
        const shown = styled && style ? style(c, i) : c;
        return i === cells.length - 1 ? shown : shown + " ".repeat(widths[i]! - c.length);
      })
      .join("  ")
      .trimEnd();
  return [line(header, false), ...body.map((r) => line(r, true))].join("\n") + "\n";
}

// C0 controls but tab and newline, DEL, and C1 controls (0x9b is a one-byte CSI on some terminals).
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
// ESC [ … final byte (CSI), ESC ] … BEL or ESC \ (OSC), and ESC plus one character.
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]/g;

/**
 * Text that came from operators, agents or machines (status messages, hostnames) made safe to
 * print: escape sequences are removed whole and other control characters become `?`, so a unit
 * cannot clear the screen, retitle the terminal or forge lines. Tabs stay; newlines stay unless
 * `keepNewlines` is false (table cells), where they and tabs become spaces.
 */
export function sanitizeForTerminal(text: string, opts: { keepNewlines?: boolean } = {}): string {
  const keepNewlines = opts.keepNewlines ?? true;
  let out = text.replace(ESCAPES, "").replace(CONTROLS, "?");
  if (!keepNewlines) out = out.replace(/[\n\t]/g, " ");
  return out;
}

/**
 * Orders names by code point: Steward's names are ASCII, and the first `localeCompare` of a process
 * loads ICU collation (~8 ms of a 150 ms `steward status`).
 */
export function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
