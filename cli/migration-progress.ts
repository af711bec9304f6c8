/** Following a migration from the CLI: each phase as it comes, and the whole of it at the end. */
import type { ControllerClient, MigrationInfo } from "../api/core";
import { TERMINAL_PHASES, routes, sanitizeForTerminal } from "../api/core";

/** Polls the source until the migration is over, printing each phase (and what holds it up) once. */
export async function waitForMigration(
  client: ControllerClient,
  model: string,
  out: (line: string) => void,
  pollMs = 1000,
): Promise<MigrationInfo> {
  let shown = "";
  for (;;) {
    // The migration this client follows, not an earlier arrival of the model.
    const info = (await client.call(routes.migration, { model })) as MigrationInfo;
    const waiting =
      info.agents && info.agents.waitingFor.length > 0
        ? ` (waiting for ${info.agents.waitingFor.length} agent${info.agents.waitingFor.length === 1 ? "" : "s"})`
        : "";
    const line = `${info.phase}: ${info.status}${waiting}`;
    if (line !== shown) {
      out(sanitizeForTerminal(line));
      shown = line;
    }
    if (TERMINAL_PHASES.has(info.phase)) return info;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export function printMigration(info: MigrationInfo, out: (line: string) => void): void {
  out(
    sanitizeForTerminal(
      `Migration ${info.id} of ${info.model.name} to ${info.target.name} (${info.target.addresses.join(", ")}): ${info.phase}`,
    ),
  );
  out(sanitizeForTerminal(`  ${info.status}`));
  if (info.failure) out(sanitizeForTerminal(`  Failure: ${info.failure}`));
  if (info.agents) {
    out(
      `  Agents: ${info.agents.reported} answered ${info.phase}${info.agents.waitingFor.length > 0 ? `; waiting for machines ${info.agents.waitingFor.slice(0, 20).join(", ")}${info.agents.waitingFor.length > 20 ? ` and ${info.agents.waitingFor.length - 20} more` : ""}` : ""}`,
    );
    for (const f of info.agents.failed) out(sanitizeForTerminal(`  Machine ${f.machine} failed: ${f.reason}`));
  }
  for (const h of info.history) out(sanitizeForTerminal(`  ${h.at}  ${h.phase}${h.note ? `  ${h.note}` : ""}`));
}
