/**
 * Were there ever two primaries accepting writes at once? PostgreSQL leaves the evidence: every
 * promotion starts a new WAL timeline and writes `pg_wal/<TLI>.history` (each ancestor timeline and
 * the LSN where it was left), every unit's `pg_controldata` says which timeline it is on and whether it
 * runs as a primary ("in production"), and the ledger ({@link ./pg-ledger}) knows which server
 * acknowledged each write on which timeline at which LSN. This reads them together and names every
 * sign of a split brain:
 *
 * - one timeline created twice: two units hold a `<TLI>.history` that disagree on where it forked;
 * - one timeline written by two servers (two units promoted to the same number);
 * - a write acknowledged on a timeline past the point where a later timeline had already left it: the
 *   old primary went on accepting writes after another unit's promotion (and the new one lacks them);
 * - the ledger going back to an older timeline after writing on a newer one;
 * - more than one unit running as a primary now.
 *
 * Pure functions over text: the fault test reads the files from each unit's host, the unit test hands
 * them in made by hand.
 */
import type { LedgerAck } from "./pg-ledger";

/** One line of a timeline history file: timeline `parent` was left at `switchpoint`. */
export interface HistoryEntry {
  parent: number;
  switchpoint: string;
  reason: string;
}

/** What one unit's data directory says. */
export interface UnitTimelines {
  unit: string;
  /** The address its server answers on (what the ledger records as `server`). */
  host: string;
  /** `pg_controldata`'s output, when it could be read. */
  controlData?: string;
  /** The `pg_wal/*.history` files, by timeline. */
  histories: Record<number, string>;
}

export interface ControlData {
  /** "Latest checkpoint's TimeLineID". */
  timeline: number;
  /** "Database cluster state", e.g. "in production", "in archive recovery", "shut down". */
  state: string;
}

export interface TimelineVerdict {
  /** Empty when nothing suggests two primaries at once. */
  problems: string[];
  /** Every timeline seen, with the unit(s) whose history file says where it forked. */
  timelines: Record<number, { from: HistoryEntry; units: string[] }>;
}

/** "16/B374D848" → a number that orders as LSNs do. */
export function parseLsn(lsn: string): bigint {
  const m = /^([0-9A-Fa-f]+)\/([0-9A-Fa-f]+)$/.exec(lsn.trim());
  if (!m) throw new Error(`not an LSN: "${lsn}"`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

/** The entries of a `.history` file (comments and blank lines skipped). */
export function parseHistory(text: string): HistoryEntry[] {
  const entries: HistoryEntry[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^(\d+)\s+([0-9A-Fa-f]+\/[0-9A-Fa-f]+)\s*(.*)$/.exec(line);
    if (!m) throw new Error(`not a timeline history line: "${line}"`);
    entries.push({ parent: Number(m[1]), switchpoint: m[2]!.toUpperCase(), reason: m[3]! });
  }
  return entries;
}

export function parseControlData(text: string): ControlData {
  const timeline = /Latest checkpoint's TimeLineID:\s+(\d+)/.exec(text)?.[1];
  const state = /Database cluster state:\s+(.+)/.exec(text)?.[1]?.trim();
  if (timeline === undefined || state === undefined) throw new Error("pg_controldata output without timeline or state");
  return { timeline: Number(timeline), state };
}

/** Reads the units' files and the ledger's acknowledgements together (see the file header). */
export function checkOnePrimaryAtATime(units: UnitTimelines[], acks: readonly LedgerAck[]): TimelineVerdict {
  const problems: string[] = [];
  const timelines: TimelineVerdict["timelines"] = {};
  const unitAt = (host: string): string => units.find((u) => u.host === host)?.unit ?? host;

  // Where each timeline forked, as every unit that has its history file tells it.
  for (const u of units) {
    for (const [tliText, text] of Object.entries(u.histories)) {
      const tli = Number(tliText);
      const entries = parseHistory(text);
      const from = entries.at(-1);
      if (!from) continue;
      const seen = timelines[tli];
      if (!seen) {
        timelines[tli] = { from, units: [u.unit] };
        continue;
      }
      seen.units.push(u.unit);
      if (seen.from.parent !== from.parent || seen.from.switchpoint !== from.switchpoint)
        problems.push(
          `timeline ${tli} was created twice: ${seen.units[0]}'s history forks it from timeline ${seen.from.parent} at ` +
            `${seen.from.switchpoint}, ${u.unit}'s from timeline ${from.parent} at ${from.switchpoint}`,
        );
    }
  }

  // One server per timeline.
  const writers = new Map<number, Set<string>>();
  for (const a of acks) writers.set(a.timeline, (writers.get(a.timeline) ?? new Set()).add(a.server));
  for (const [tli, servers] of writers)
    if (servers.size > 1)
      problems.push(
        `timeline ${tli} accepted writes on ${servers.size} servers: ${[...servers].map(unitAt).join(", ")}`,
      );

  // No write on a timeline beyond the point where a later timeline had left it.
  for (const [tliText, { from }] of Object.entries(timelines)) {
    const late = acks.filter((a) => a.timeline === from.parent && parseLsn(a.lsn) > parseLsn(from.switchpoint));
    if (late.length > 0)
      problems.push(
        `${late.length} write(s) acknowledged on timeline ${from.parent} (by ${[...new Set(late.map((a) => unitAt(a.server)))].join(", ")}) ` +
          `after timeline ${tliText} had left it at ${from.switchpoint}, first seq ${late[0]!.seq} at ${late[0]!.lsn}`,
      );
  }

  // The ledger never goes back to an older timeline.
  const bySeq = [...acks].sort((a, b) => a.seq - b.seq);
  for (let i = 1; i < bySeq.length; i++) {
    const [prev, cur] = [bySeq[i - 1]!, bySeq[i]!];
    if (cur.timeline < prev.timeline)
      problems.push(
        `seq ${cur.seq} was acknowledged on timeline ${cur.timeline} (${unitAt(cur.server)}) after seq ${prev.seq} on ` +
          `timeline ${prev.timeline} (${unitAt(prev.server)})`,
      );
  }

  // At most one primary now.
  const primaries = units.filter((u) => u.controlData && parseControlData(u.controlData).state === "in production");
  if (primaries.length > 1)
    problems.push(`${primaries.length} units run as primary now: ${primaries.map((u) => u.unit).join(", ")}`);

  return { problems, timelines };
}
