/**
 * What a unit's agent remembers across restarts (`<agent-dir>/units/<unit>/state.json`), written
 * atomically after every committed hook: a restarted agent resumes without re-running a committed
 * hook and without skipping one.
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { TaskFinish } from "../api/core";
import { writeFileAtomic } from "./files";

export type HookKind =
  | "install"
  | "start"
  | "config-changed"
  | "upgrade"
  | "update-status"
  | "stop"
  | "remove"
  | "leader-elected"
  | "leader-settings-changed"
  | "workload-ready"
  | "storage-attached"
  | "storage-detaching"
  | "secret-changed"
  | "secret-rotate"
  | "secret-expired"
  | "secret-remove"
  | "relation-created"
  | "relation-joined"
  | "relation-changed"
  | "relation-departed"
  | "relation-broken";

/** One hook to run, with its relation context when it is a relation hook. */
export interface HookSpec {
  kind: HookKind;
  /** The executable's name: the kind, or `<endpoint>-<kind>` for relation hooks. */
  name: string;
  relationId?: number;
  remoteUnit?: string;
  remoteApp?: string;
  departingUnit?: string;
  /** The databag revision a relation-changed hook was decided on (recorded when it commits). */
  version?: number;
  /** A workload-ready hook's container, and the supervisor (its bootId) it was decided on. */
  container?: string;
  supervisor?: string;
  /** A storage hook's instance (`data/0`). */
  storageId?: string;
  /** A secret hook's secret (`secret:<id>`) and the label the unit knows it by. */
  secretUri?: string;
  secretLabel?: string;
  /** secret-changed: the latest revision it was decided on; secret-expired/-remove: the revision concerned. */
  secretRevision?: number;
  /** secret-rotate: the due time it was decided on (a later due time runs it again). */
  secretDue?: string;
}

/** What the unit's secret hooks have seen of one secret (absent fields: none of that hook yet). */
export interface SecretLocalState {
  /** The latest revision a secret-changed hook ran for. */
  changed?: number;
  /** The rotation due time a secret-rotate hook ran for. */
  rotated?: string;
  /** Revisions whose secret-expired hook ran. */
  expired?: number[];
  /** Revisions whose secret-remove hook ran. */
  removed?: number[];
}

/** A relation the unit has entered (after its relation-created hook). */
export interface RelationLocalState {
  endpoint: string;
  remoteApp: string;
  peer: boolean;
  /** Remote units joined, with the databag revision last seen by relation-changed (-1: changed is due). */
  joined: Record<string, number>;
  /** Remote application databag revision last seen. */
  appVersion: number;
  broken: boolean;
}

export interface UnitLocalState {
  installed: boolean;
  started: boolean;
  stopped: boolean;
  removed: boolean;
  /** Operator content the unit last installed or upgraded to. */
  operatorHash: string;
  /** Hash of the config the last committed config-changed saw ("" before the first). */
  configHash: string;
  /** The unit address the last committed config-changed saw: a new one runs config-changed again, as in Juju. */
  address?: string;
  /** The machine boot in which start last committed: after a reboot start runs again, as in Juju. */
  bootId?: string;
  /** Whether the operator ever set a workload status (if not, it shows "unknown" once started). */
  statusSet: boolean;
  /** The workload status the operator last set, for status-get after a restart. */
  workload: { status: string; message: string };
  /** leader-elected has run and leadership was not lost since. */
  leader: boolean;
  /** Leader data revision last seen by leader-elected or leader-settings-changed (-1: neither ran yet). */
  leaderSettingsVersion: number;
  relations: Record<string, RelationLocalState>;
  /** Ports opened by committed hooks. */
  ports: string[];
  /** The hook that failed and must run again (or be resolved) before anything else. */
  failedHook?: HookSpec;
  /** Names of committed hooks, oldest first (capped), for operators and tests that inspect history. */
  committed: string[];
  /** The highest task id this unit has finished (task ids grow, so each queued action runs once). */
  lastTask: number;
  /** The action running now: found on restart, it was cut off and is reported failed, never run again. */
  runningTask?: number;
  /** A finished action's report not yet accepted by the controller: sent before anything else runs. */
  unsentTask?: TaskFinish;
  /** The controller's restore epoch the recorded revisions belong to ("" or absent: never restored; restore-epoch.ts). */
  storeEpoch?: string;
  /**
   * What the operator last said with readiness-set, and in which boot (absent in older files and
   * until it says anything: readiness then follows the workload status; see readiness.ts).
   */
  readiness?: { ready: boolean; message: string; bootId?: string };
  /** Per workload container, the supervisor (its bootId) whose `<container>-workload-ready` has run. */
  workloadReady?: Record<string, string>;
  /** Storage instances whose `<name>-storage-attached` has run and whose `-storage-detaching` has not (absent: none ever). */
  storage?: string[];
  /** Per secret uri, the secret hooks that ran (absent: none ever); forgotten once the view no longer has the secret. */
  secrets?: Record<string, SecretLocalState>;
}

export const initialUnitState = (): UnitLocalState => ({
  installed: false,
  started: false,
  stopped: false,
  removed: false,
  operatorHash: "",
  configHash: "",
  statusSet: false,
  workload: { status: "waiting", message: "" },
  leader: false,
  leaderSettingsVersion: -1,
  relations: {},
  ports: [],
  committed: [],
  lastTask: 0,
});

const MAX_HISTORY = 200;

export async function loadUnitState(unitDir: string): Promise<UnitLocalState> {
  const text = await readFile(join(unitDir, "state.json"), "utf8").catch(() => undefined);
  return text ? { ...initialUnitState(), ...(JSON.parse(text) as Partial<UnitLocalState>) } : initialUnitState();
}

export async function saveUnitState(unitDir: string, s: UnitLocalState): Promise<void> {
  await mkdir(unitDir, { recursive: true, mode: 0o700 });
  if (s.committed.length > MAX_HISTORY) s.committed = s.committed.slice(-MAX_HISTORY);
  await writeFileAtomic(join(unitDir, "state.json"), JSON.stringify(s));
}
