/** `steward status` in the shape Juju users read at a glance (coloured by status on a terminal, as Juju does). */
import type { ModelStatus } from "../api/core";
import { byName, formatLeaseSeconds, sanitizeForTerminal, table } from "../api/core";
import { paint, statusColour } from "./colour";

export function formatStatusTabular(s: ModelStatus, opts: { colour?: boolean } = {}): string {
  /** Colours the cells of the named columns by the status word they hold. */
  const statusIn =
    (...columns: number[]) =>
    (cell: string, column: number): string =>
      opts.colour && columns.includes(column) ? paint(cell, statusColour(cell)) : cell;
  const parts: string[] = [];
  parts.push(
    table(
      ["Model", "Controller", "Status", "Timestamp"],
      [[s.model.name, s.model.controller, s.model.status.current, s.timestamp.slice(11, 19) + "Z"]],
      statusIn(2),
    ),
  );
  if (s.model.status.message) parts.push(`${sanitizeForTerminal(s.model.status.message)}\n`);
  const apps = Object.values(s.applications).sort((a, b) => byName(a.name, b.name));
  if (apps.length > 0) {
    // An application with its own leadership lease shows it; models without any keep the narrower table.
    const leased = apps.some((a) => a.leadershipLeaseSeconds !== undefined);
    parts.push(
      table(
        ["App", "Version", "Status", "Scale", "Operator", "Rev", ...(leased ? ["Lease"] : []), "Message"],
        apps.map((a) => {
          const ready = Object.values(a.units).filter(
            (u) => u.agent.current === "idle" || u.agent.current === "executing",
          ).length;
          return [
            a.name,
            a.version,
            a.status.current,
            ready === a.scale ? String(a.scale) : `${ready}/${a.scale}`,
            a.operator.name,
            a.operator.revision === undefined ? "" : String(a.operator.revision),
            ...(leased
              ? [a.leadershipLeaseSeconds === undefined ? "" : formatLeaseSeconds(a.leadershipLeaseSeconds)]
              : []),
            a.status.message,
          ];
        }),
        statusIn(2),
      ),
    );
    const rows: string[][] = [];
    // Units with storage show it; models without any keep the narrower table.
    const stored = apps.some((a) => Object.values(a.units).some((u) => u.storage));
    for (const a of apps) {
      for (const u of Object.values(a.units)) {
        const busy =
          u.agent.current === "executing" && u.agent.message
            ? `(${u.agent.message.replace(/^running (.*) hook$/, "$1")}) `
            : "";
        rows.push([
          `${u.name}${u.leader ? "*" : ""}`,
          u.workload.current,
          u.agent.current,
          u.machine,
          u.address ?? "",
          u.ports.join(","),
          ...(stored ? [(u.storage ?? []).join(",")] : []),
          busy + (u.agent.current === "lost" ? u.agent.message : u.workload.message),
        ]);
      }
    }
    const heads = [
      "Unit",
      "Workload",
      "Agent",
      "Machine",
      "Address",
      "Ports",
      ...(stored ? ["Storage"] : []),
      "Message",
    ];
    if (rows.length > 0) parts.push(table(heads, rows, statusIn(1, 2)));
  }
  const machines = Object.values(s.machines);
  if (machines.length > 0) {
    // Cloud machines say what they are (or were asked to be); other models keep the narrower table.
    const sized = machines.some((m) => m.hardware || m.constraints);
    const size = (m: (typeof machines)[number]): string[] =>
      sized ? [m.hardware ?? (m.constraints ? `asked: ${m.constraints}` : "")] : [];
    parts.push(
      table(
        ["Machine", "State", "Address", "Substrate", ...(sized ? ["Hardware"] : []), "Message"],
        machines.map((m) => [
          m.id,
          m.status.current,
          m.address,
          m.substrate,
          ...size(m),
          m.life === "dying" ? "removing" : m.status.message,
        ]),
        statusIn(1),
      ),
    );
  }
  if (s.integrations.length > 0) {
    parts.push(
      table(
        ["Integration provider", "Requirer", "Interface", "Type", "Message"],
        s.integrations.map((i) => [i.provider, i.requirer, i.interface, i.type, i.life === "dying" ? "removing" : ""]),
      ),
    );
  }
  if (apps.length === 0 && machines.length === 0) parts.push(`Model "${s.model.name}" is empty.\n`);
  return parts.join("\n");
}
