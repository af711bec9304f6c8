/**
 * Whether to colour what a command prints, as other terminal tools decide: `NO_COLOR` (any value)
 * never, `FORCE_COLOR` (but 0/false) always, a dumb terminal never, else only on a terminal, so
 * output piped to a file or another program is plain text.
 */
export function colourWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "0" && force !== "false") return true;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

const CODES = { green: 32, yellow: 33, red: 31, blue: 34, grey: 90 } as const;
export type Colour = keyof typeof CODES;

export function paint(text: string, colour: Colour | undefined): string {
  return colour && text ? `\x1b[${CODES[colour]}m${text}\x1b[0m` : text;
}

/** A status word's colour, as `juju status` shows it: ready green, busy or waiting yellow, stuck or failed red. */
export function statusColour(status: string): Colour | undefined {
  switch (status) {
    case "active":
    case "idle":
    case "started":
    case "available":
      return "green";
    case "maintenance":
    case "waiting":
    case "executing":
    case "allocating":
    case "pending":
      return "yellow";
    case "blocked":
    case "error":
    case "lost":
    case "down":
      return "red";
    case "terminated":
    case "stopped":
    case "unknown":
      return "grey";
    default:
      return undefined;
  }
}
