/**
 * What every hook tool is built from: the context it acts on (the running hook's unit) and the
 * shape of its answer (exit 0 on success, 1 on a refusal, 2 on misuse).
 */
import type { SecretChange, SecretInfo, UnitSecretView, UnitView } from "../../api/core";
import type { ActionRun } from "../action-run";
import type { Readiness } from "../readiness";
import type { SupervisorClient } from "../workload/supervisor-client";

export interface ToolResult {
  code: number;
  stdout?: string;
  stderr?: string;
}

/** What a tool may see and do: the unit whose hook is running. */
export interface HookContext {
  unit: string;
  hook: string;
  /** The relation of a relation hook. */
  relation?: { id: number; endpoint: string; remoteUnit?: string; remoteApp?: string };
  /** The storage instance of a storage hook (`data/0`). */
  storageId?: string;
  view(): UnitView;
  workloadStatus(): { status: string; message: string };
  setWorkloadStatus(status: string, message: string): Promise<void>;
  /** Leader only; refused otherwise. */
  setAppStatus(status: string, message: string): Promise<void>;
  setVersion(version: string): Promise<void>;
  log(level: string, message: string): void;
  /**
   * Asks the controller (and renews leadership when held); true only while at least half the lease
   * of leadership is guaranteed, answered from the unit's last renewal when the controller is out of reach.
   */
  isLeader(): Promise<boolean>;
  /** leader-resign: gives leadership up now (only `to` may claim for the next lease period, or anyone but this unit); absent: not offered. */
  resignLeadership?(to?: string): Promise<void>;
  leaderGet(): Promise<Record<string, string>>;
  leaderSet(patch: Record<string, string | null>): Promise<void>;
  /** A databag as this hook sees it (its own pending writes included). */
  relationGet(relationId: number, target: { unit?: string; app?: string }): Promise<Record<string, string>>;
  relationSet(relationId: number, app: boolean, patch: Record<string, string | null>): void;
  openPort(spec: string): void;
  closePort(spec: string): void;
  openedPorts(): string[];
  /** storage-add: `count` more instances of store `name`, made with the hook's commit (absent: no hook to commit with). */
  storageAdd?(name: string, count: number): void;
  /** The unit's readiness now (readiness.ts), including what this hook said. */
  readiness(): Readiness;
  /** readiness-set: the operator's word, kept in the unit's local state at once. */
  setReadiness(ready: boolean, message: string): Promise<void>;
  /** The action being run, when the tool runs inside one (action-get, action-set, action-fail, action-log). */
  action?: ActionRun;
  /** The pod's workload containers (Kubernetes only; absent elsewhere): what the container-* tools drive. */
  workload?: WorkloadAccess;
  /** The unit's secrets, as the secret-* tools read and change them (absent: no hook to commit with). */
  secrets?: SecretAccess;
}

/** One revision of a secret's values, as a hook reads it. */
export interface SecretRead {
  revision: number;
  values: Record<string, string>;
}

/** A hook's view of its unit's secrets: changes are buffered for the hook's commit, and read back by the hook itself. */
export interface SecretAccess {
  /** What the unit sees of its secrets (never values), with this hook's own adds, labels and removals. */
  list(): UnitSecretView[];
  /**
   * `secret-get`: the owner reads the latest (or this hook's own pending content); a consumer its
   * tracked revision (the latest on a first read, which it then tracks), `peek` the latest without
   * tracking it, `refresh` the latest and tracks it; `label` names the secret for this consumer.
   */
  get(uri: string, how?: { peek?: boolean; refresh?: boolean; label?: string }): Promise<SecretRead>;
  /** `secret-info-get`: an owned secret's metadata. */
  info(uri: string): Promise<SecretInfo>;
  /** Buffers a change for the hook's commit. */
  change(c: SecretChange): void;
}

export interface WorkloadAccess {
  /** The containers whose supervisor socket is in the shared volume, by name. */
  containers(): Promise<string[]>;
  client(container: string): SupervisorClient;
}

/** What a tool call brings besides its arguments: the hook's working directory and, for tools that read it, its input. */
export interface ToolIO {
  cwd?: string;
  stdin?: string;
}

export type Flags = Record<string, string | true>;
export interface ToolSpec {
  usage: string;
  summary: string;
  flags: Record<string, "bool" | "value">;
  /** Its arguments may hold secret values: misuse messages never repeat an argument that is not a flag's name. */
  sensitive?: true;
  run(ctx: HookContext, flags: Flags, positional: string[], io: ToolIO): Promise<ToolResult>;
}

export const ok = (stdout = ""): ToolResult => ({ code: 0, stdout });
export const refuse = (tool: string, msg: string): ToolResult => ({ code: 1, stderr: `${tool}: ${msg}\n` });
export const misuse = (tool: string, msg: string, usage: string): ToolResult => ({
  code: 2,
  stderr: `${tool}: ${msg}\nusage: ${usage}\n`,
});
export const json = (v: unknown): string => JSON.stringify(v) + "\n";

export class ToolError extends Error {
  constructor(readonly result: ToolResult) {
    super(result.stderr);
  }
}
