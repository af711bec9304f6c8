/**
 * The ports a unit opens (`open-port`, `close-port`), in Juju's forms: `80`, `80/tcp`, `53/udp`,
 * `8000-8010/tcp` or `icmp`. Hook tools normalise them (`80` → `80/tcp`) and the controller takes
 * only normalised ones, so status never shows a port that cannot exist or bytes a terminal runs.
 */

const PORT_FORM = /^(?:icmp|(\d{1,5})(?:-(\d{1,5}))?(?:\/(tcp|udp))?)$/;

export type ParsedPort =
  | { ok: true; port: string }
  /** `form`: not one of the forms above; `range`: a number outside 1-65535, or a range backwards. */
  | { ok: false; reason: "form" | "range"; message: string };

/** Parses one port as a hook tool is given it; `port` is the normalised form. */
export function parsePort(text: string): ParsedPort {
  // JSON quoting shows control characters as escapes instead of sending them to a terminal.
  const shown = JSON.stringify(text);
  const m = PORT_FORM.exec(text);
  if (!m)
    return {
      ok: false,
      reason: "form",
      message: `${shown} is not a port such as 80, 80/tcp, 53/udp, 8000-8010/tcp or icmp`,
    };
  if (text === "icmp") return { ok: true, port: "icmp" };
  const from = Number(m[1]);
  const to = m[2] ? Number(m[2]) : from;
  if (from < 1 || to > 65535) return { ok: false, reason: "range", message: `port ${shown} is outside 1-65535` };
  if (to < from) return { ok: false, reason: "range", message: `port range ${shown} ends before it starts` };
  return { ok: true, port: `${from}${to !== from ? `-${to}` : ""}/${m[3] ?? "tcp"}` };
}

/** Whether `text` is a port in the normalised form hook tools commit. */
export function isNormalisedPort(text: string): boolean {
  const parsed = parsePort(text);
  return parsed.ok && parsed.port === text;
}
