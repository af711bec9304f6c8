/**
 * {@link HookRunContext} is what the tools of one running hook act on. Relation data, port
 * changes, storage-add requests and secret changes (hook-secrets.ts) are buffered here and sent as
 * one commit when the hook succeeds; reads of the unit's own databags and secrets see the hook's
 * pending writes, as in Juju.
 */
import type { HookCommit, LogRecordLevel, Logger, UnitView } from "../api/core";
import type { ControllerConnection } from "./connection";
import { HookSecrets } from "./hook-secrets";
import type { HookContext, WorkloadAccess } from "./hook-tools/tools";
import type { UnitLeadership } from "./leadership";
import type { ActionRun } from "./action-run";
import type { Readiness } from "./readiness";
import type { StatusReporter } from "./status-reporter";
import type { HookSpec, UnitLocalState } from "./unit-state";

export interface HookRunDeps {
  unit: string;
  /** The hook, or for an action its name (with no relation). */
  hook: Pick<HookSpec, "name" | "relationId" | "remoteUnit" | "remoteApp" | "storageId">;
  /** The action being run, when this is one: what action-get reads and action-set/-fail/-log write. */
  action?: ActionRun;
  view: () => UnitView;
  state: () => UnitLocalState;
  conn: ControllerConnection;
  /** The unit's leadership: is-leader and leader-resign go through it (leadership.ts). */
  leadership: UnitLeadership;
  reporter: StatusReporter;
  log: Logger;
  appendLog: (line: string) => void;
  /** The `log` tool's message, for `steward debug-log` (level as the tool took it: DEBUG … ERROR). */
  forwardLog: (level: LogRecordLevel, message: string) => void;
  onWorkloadStatus: (status: string, message: string) => void;
  readiness: () => Readiness;
  /** Keeps the operator's readiness-set in the unit's local state (resolves once it is on disk). */
  onReadiness: (ready: boolean, message: string) => Promise<void>;
  /** The pod's workload containers (Kubernetes only). */
  workload?: WorkloadAccess;
}

export class HookRunContext implements HookContext {
  readonly unit: string;
  readonly hook: string;
  readonly relation?: HookContext["relation"];
  readonly storageId?: string;
  readonly action?: ActionRun;
  readonly workload?: WorkloadAccess;
  readonly secrets: HookSecrets;
  private readonly writes = new Map<string, { relationId: number; app: boolean; set: Record<string, string | null> }>();
  private readonly opened = new Set<string>();
  private readonly closed = new Set<string>();
  private readonly storageAdds: Record<string, number> = {};

  constructor(private readonly d: HookRunDeps) {
    this.unit = d.unit;
    this.hook = d.hook.name;
    if (d.action) this.action = d.action;
    if (d.hook.storageId) this.storageId = d.hook.storageId;
    if (d.workload) this.workload = d.workload;
    this.secrets = new HookSecrets(d.unit, d.view, (method, params) => d.conn.call(method, params));
    if (d.hook.relationId !== undefined) {
      const vr = d.view().relations.find((r) => r.id === d.hook.relationId);
      this.relation = {
        id: d.hook.relationId,
        endpoint: vr?.endpoint ?? d.state().relations[String(d.hook.relationId)]?.endpoint ?? "",
        ...(d.hook.remoteUnit ? { remoteUnit: d.hook.remoteUnit } : {}),
        ...(d.hook.remoteApp ? { remoteApp: d.hook.remoteApp } : {}),
      };
    }
  }

  view(): UnitView {
    return this.d.view();
  }
  workloadStatus(): { status: string; message: string } {
    return this.d.state().workload;
  }

  async setWorkloadStatus(status: string, message: string): Promise<void> {
    await this.d.reporter.report(this.unit, { workload: { current: status as "active", message } });
    this.d.onWorkloadStatus(status, message);
  }

  async setAppStatus(status: string, message: string): Promise<void> {
    await this.d.conn.call("app.status", { unit: this.unit, status, message });
  }

  setVersion(version: string): Promise<void> {
    return this.d.reporter.report(this.unit, { version });
  }

  log(level: string, message: string): void {
    // Debug locally: forwarding it as an agent line too would show it twice in debug-log.
    this.d.log.debug("operator log", { unit: this.unit, level, message });
    this.d.forwardLog(level as LogRecordLevel, message);
    this.d.appendLog(`${new Date().toISOString()} ${level} ${message}`);
  }

  isLeader(): Promise<boolean> {
    return this.d.leadership.isLeader();
  }

  resignLeadership(to?: string): Promise<void> {
    return this.d.leadership.resign(to);
  }

  async leaderGet(): Promise<Record<string, string>> {
    return (await this.d.conn.call<{ data: Record<string, string> }>("leader.get", { unit: this.unit })).data;
  }

  async leaderSet(patch: Record<string, string | null>): Promise<void> {
    await this.d.conn.call("leader.set", { unit: this.unit, data: patch });
  }

  async relationGet(relationId: number, target: { unit?: string; app?: string }): Promise<Record<string, string>> {
    const data = {
      ...(
        await this.d.conn.call<{ data: Record<string, string> }>("relation.get", {
          unit: this.unit,
          relationId,
          target,
        })
      ).data,
    };
    const own = target.app !== undefined ? target.app === this.d.view().app : (target.unit ?? this.unit) === this.unit;
    const pending = own ? this.writes.get(`${relationId}/${target.app !== undefined ? "app" : "unit"}`) : undefined;
    for (const [k, v] of Object.entries(pending?.set ?? {})) {
      if (v === null) delete data[k];
      else data[k] = v;
    }
    return data;
  }

  relationSet(relationId: number, app: boolean, patch: Record<string, string | null>): void {
    const key = `${relationId}/${app ? "app" : "unit"}`;
    const w = this.writes.get(key) ?? { relationId, app, set: {} };
    Object.assign(w.set, patch);
    this.writes.set(key, w);
  }

  readiness(): Readiness {
    return this.d.readiness();
  }
  setReadiness(ready: boolean, message: string): Promise<void> {
    return this.d.onReadiness(ready, message);
  }

  openPort(spec: string): void {
    this.closed.delete(spec);
    this.opened.add(spec);
  }
  closePort(spec: string): void {
    this.opened.delete(spec);
    this.closed.add(spec);
  }

  storageAdd(name: string, count: number): void {
    this.storageAdds[name] = (this.storageAdds[name] ?? 0) + count;
  }

  openedPorts(): string[] {
    const ports = new Set(this.d.state().ports);
    for (const p of this.closed) ports.delete(p);
    for (const p of this.opened) ports.add(p);
    return [...ports].sort();
  }

  /** Everything this hook wrote, as one commit (entering `enterScope` relations with it). */
  commit(enterScope: number[]): HookCommit {
    const secrets = this.secrets.pending();
    return {
      unit: this.unit,
      relations: [...this.writes.values()],
      ...(this.opened.size + this.closed.size > 0
        ? { ports: { open: [...this.opened], close: [...this.closed] } }
        : {}),
      enterScope,
      ...(Object.keys(this.storageAdds).length > 0 ? { storage: { ...this.storageAdds } } : {}),
      ...(secrets ? { secrets } : {}),
    };
  }

  /** Whether the commit has anything for the controller. */
  static isEmpty(c: HookCommit): boolean {
    return c.relations.length === 0 && !c.ports && c.enterScope.length === 0 && !c.storage && !c.secrets;
  }
}
