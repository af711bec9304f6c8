/**
 * Keeping a process running on a host: a systemd unit where systemd runs; elsewhere a small
 * supervisor loop, started now and registered in /etc/steward/boot.d for the host's init to start
 * at boot. Both run `<dir>/launch` and append to `<dir>/<log>`.
 */
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";

export const SERVICE_PATHS = { bootDir: "/etc/steward/boot.d", unitDir: "/etc/systemd/system" };

export interface ServiceSpec {
  /** e.g. `steward-agent-<model>-<machine>`. */
  unit: string;
  description: string;
  /** Directory holding `launch` (and the pid files of the supervisor). */
  dir: string;
  log: string;
  systemd: boolean;
  /** Restart even if nothing about the service changed (its config did). */
  restart: boolean;
}

/** Makes sure the service is defined and running; returns whether anything changed. */
export async function ensureService(s: SshSession, spec: ServiceSpec): Promise<boolean> {
  return spec.systemd ? ensureSystemdUnit(s, spec) : ensureSupervisor(s, spec);
}

/** The shell lines that stop and unregister the service (for uninstall scripts). */
export function removeServiceCommands(spec: Pick<ServiceSpec, "unit" | "dir" | "systemd">): string {
  return spec.systemd
    ? `systemctl disable --now ${spec.unit} 2>/dev/null; rm -f ${SERVICE_PATHS.unitDir}/${spec.unit}.service; systemctl daemon-reload`
    : `rm -f ${SERVICE_PATHS.bootDir}/${spec.unit}; kill "$(cat ${spec.dir}/supervisor.pid 2>/dev/null)" 2>/dev/null`;
}

export async function writeIfDifferent(s: SshSession, path: string, content: string, mode: string): Promise<boolean> {
  const current = (await s.run(`cat ${shellQuote(path)} 2>/dev/null`, { sudo: true })).stdout;
  if (current === content.trimEnd()) return false; // execCommand trims output
  await s.writeFile(path, content, mode);
  return true;
}

/** The systemd unit that keeps `<dir>/launch` running. */
export function systemdUnitText(spec: Pick<ServiceSpec, "description" | "dir" | "log">): string {
  return `[Unit]\nDescription=${spec.description}\nAfter=network-online.target\nWants=network-online.target\n\n[Service]\nExecStart=${spec.dir}/launch\nRestart=always\nRestartSec=2\nStandardOutput=append:${spec.dir}/${spec.log}\nStandardError=append:${spec.dir}/${spec.log}\n\n[Install]\nWantedBy=multi-user.target\n`;
}

async function ensureSystemdUnit(s: SshSession, spec: ServiceSpec): Promise<boolean> {
  const unit = systemdUnitText(spec);
  const changed = await writeIfDifferent(s, `${SERVICE_PATHS.unitDir}/${spec.unit}.service`, unit, "0644");
  if (changed)
    await s.must("enabling the service", `systemctl daemon-reload && systemctl enable ${spec.unit}`, { sudo: true });
  const active = (await s.run(`systemctl is-active --quiet ${spec.unit}`, { sudo: true })).code === 0;
  if (!active || changed || spec.restart)
    await s.must("starting the service", `systemctl restart ${spec.unit}`, { sudo: true });
  return changed || spec.restart || !active;
}

/** The supervisor loop that keeps `<dir>/launch` running on a host without systemd. */
export function supervisorScript(spec: Pick<ServiceSpec, "description" | "dir" | "log">): string {
  return [
    "#!/bin/sh",
    `# Keeps ${spec.description} running on a host without systemd; the host's init runs ${SERVICE_PATHS.bootDir}/* at boot.`,
    `dir=${shellQuote(spec.dir)}`,
    'echo $$ > "$dir/supervisor.pid"',
    "child=",
    'trap \'[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0\' TERM INT',
    "while :; do",
    `  "$dir/launch" >>"$dir/${spec.log}" 2>&1 &`,
    "  child=$!",
    "  wait $child",
    "  sleep 2",
    "done",
    "",
  ].join("\n");
}

async function ensureSupervisor(s: SshSession, spec: ServiceSpec): Promise<boolean> {
  const script = supervisorScript(spec);
  const path = `${SERVICE_PATHS.bootDir}/${spec.unit}`;
  const changed = await writeIfDifferent(s, path, script, "0755");
  const pidFile = shellQuote(`${spec.dir}/supervisor.pid`);
  // The pid file outlives a reboot, and its number may belong to another process by now: only one
  // running this very script is ours, to trust as running or to stop.
  const ours = `pid="$(cat ${pidFile} 2>/dev/null)" && kill -0 "$pid" 2>/dev/null && grep -qaF ${shellQuote(path)} "/proc/$pid/cmdline"`;
  const running = (await s.run(ours, { sudo: true })).code === 0;
  if (running && !changed && !spec.restart) return false;
  if (running) await s.run(`${ours} && kill "$pid"; sleep 0.5`, { sudo: true });
  await s.must("starting the service", `setsid ${shellQuote(path)} </dev/null >/dev/null 2>&1 &`, { sudo: true });
  return true;
}
