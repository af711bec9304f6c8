/**
 * Upgrading a controller replica installed over SSH in place (`steward upgrade-controller`). Each
 * release is staged in its own content-addressed directory (`/opt/steward/controller/<hash>`, see
 * {@link stageController}), so the new one goes beside the running one; the switch is the replica's
 * `launch` script, replaced atomically, with the running one kept as `launch.previous`; then the
 * service restarts. A rollback puts `launch.previous` back and restarts again.
 */
import { StewardError } from "../../api/core";
import type { ControllerFiles, Staged } from "./controller-installer";
import { CONTROLLER_DATA, CONTROLLER_UNIT, stageController, startControllerService } from "./controller-installer";
import { SERVICE_PATHS, ensureService } from "./service";
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";

const LAUNCH = `${CONTROLLER_DATA}/launch`;
const PREVIOUS = `${CONTROLLER_DATA}/launch.previous`;

/** Uploads the new release beside the running one (only what the host lacks); changes nothing that runs. */
export async function stageControllerUpgrade(
  s: SshSession,
  files: ControllerFiles,
  note: (step: string) => void,
): Promise<Staged> {
  const launch = (await s.run(`cat ${LAUNCH} 2>/dev/null`, { sudo: true })).stdout;
  if (!launch)
    throw new StewardError(
      "invalid-request",
      `${s.target.host} has no controller installed in ${CONTROLLER_DATA} (no launch script there)`,
    );
  // A replica whose launch puts a shipped etcd on its PATH keeps it; one on the embedded store needs none.
  return stageController(s, files, note, { etcd: /^PATH=/m.test(launch) });
}

/** Points the replica at the staged release and restarts it, keeping the running release for {@link rollbackControllerUpgrade}. */
export async function switchControllerRelease(
  s: SshSession,
  staged: Staged,
  replica: string,
  note: (step: string) => void,
): Promise<void> {
  // A re-run after the switch must not overwrite the kept release with the new one.
  await s.must(
    "keeping the running release for a rollback",
    `if ! grep -qF ${shellQuote(staged.root)} ${LAUNCH}; then cp -p ${LAUNCH} ${PREVIOUS}; fi`,
    { sudo: true },
  );
  await stopController(s, staged.facts.systemd);
  await startControllerService(s, staged, `Steward controller replica ${replica}`, note, true);
}

/** Puts the kept release back and restarts the replica on it. */
export async function rollbackControllerUpgrade(s: SshSession, replica: string): Promise<void> {
  // As the install chose: a systemd unit where there is one, else the supervisor loop.
  const systemd =
    (await s.run(`test -f ${SERVICE_PATHS.unitDir}/${CONTROLLER_UNIT}.service`, { sudo: true })).code === 0;
  const kept = (await s.run(`test -f ${PREVIOUS}`, { sudo: true })).code === 0;
  if (!kept)
    throw new StewardError(
      "internal",
      `${s.target.host} has no previous release to roll back to (${PREVIOUS} is missing)`,
    );
  await s.must("restoring the previous release", `mv -f ${PREVIOUS} ${LAUNCH}`, { sudo: true });
  await stopController(s, systemd);
  await ensureService(s, {
    unit: CONTROLLER_UNIT,
    description: `Steward controller replica ${replica}`,
    dir: CONTROLLER_DATA,
    log: "controller.log",
    systemd,
    restart: true,
  });
}

/** Deletes the releases on the host that neither `launch` nor `launch.previous` runs (earlier upgrades, a failed one). */
export async function pruneControllerReleases(s: SshSession): Promise<void> {
  const root = "/opt/steward/controller";
  await s.must(
    "removing old releases",
    [
      `keep="$(grep -ho '${root}/[0-9a-f]*' ${LAUNCH} ${PREVIOUS} 2>/dev/null | sort -u)"`,
      // Never an empty keep list: with no launch script to read, nothing is removed.
      `[ -n "$keep" ] || exit 0`,
      `for d in ${root}/*; do [ -d "$d" ] || continue; echo "$keep" | grep -qxF "$d" || rm -rf "$d"; done`,
    ].join("\n"),
    { sudo: true },
  );
}

/**
 * Stops the replica and waits until its process is gone: the new one must not start while the old
 * one still holds its ports and its etcd member (systemd's restart waits by itself; the supervisor
 * loop of hosts without systemd does not).
 */
async function stopController(s: SshSession, systemd: boolean): Promise<void> {
  if (systemd) {
    await s.must("stopping the controller", `systemctl stop ${CONTROLLER_UNIT}`, { sudo: true });
    return;
  }
  const supervisor = `${SERVICE_PATHS.bootDir}/${CONTROLLER_UNIT}`;
  await s.must(
    "stopping the controller",
    [
      `pid="$(cat ${CONTROLLER_DATA}/supervisor.pid 2>/dev/null)"`,
      `if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -qaF ${shellQuote(supervisor)} "/proc/$pid/cmdline"; then kill "$pid"; fi`,
      `c="$(cat ${CONTROLLER_DATA}/controller.pid 2>/dev/null)"`,
      // Only a process that is still this replica's controller is waited for (a pid file outlives its process).
      `i=0; while [ -n "$c" ] && [ $i -lt 150 ] && grep -qaF ${shellQuote(CONTROLLER_DATA)} "/proc/$c/cmdline" 2>/dev/null; do sleep 0.2; i=$((i+1)); done`,
      `if [ -n "$c" ] && grep -qaF ${shellQuote(CONTROLLER_DATA)} "/proc/$c/cmdline" 2>/dev/null; then kill -9 "$c"; fi`,
      "true",
    ].join("\n"),
    { sudo: true },
  );
}
