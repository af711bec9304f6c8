/**
 * {@link MigrationMaster} drives each migration of this controller's models, on the leader only
 * (Juju's migrationmaster). Its cursor is the migration document: every phase change is one
 * transaction on it, so a leader that takes over resumes the phase where the last one was, and
 * every step of a phase can be done twice (staging replaces, activation is answered again, the
 * reap deletes what is there).
 *
 * Aborting is a phase like the others, retried until it is known how it ended: before the target
 * was asked to activate, the source model never stopped being the one that counts (the target
 * purges a staging nobody heartbeats); after, only the target can say, and until it does the
 * model stays held (Juju #21459: an abort that failed once left the model half alive on both).
 */
import { join } from "node:path";
import type { ControllerClient, ControllerHello, MigrationPhase } from "../../api";
import { STEWARD_VERSION, StewardError, contractOf, isUnavailable, olderMinor } from "../../api";
import type { MachineDoc, MigrationDoc, StateCache, WrittenModelExport } from "../state";
import {
  MODEL_EXPORT_VERSION,
  agentReports,
  canMove,
  decode,
  docs,
  exportForReader,
  exportModel,
  exportVersionFor,
  countSecretValues,
  sealExportSecrets,
  keys,
  migrationActive,
  modelDeletes,
  put,
} from "../state";
import type { Sealer } from "../security/sealing";
import { KEPT_HASH_DIGITS } from "../security/credentials";
import type { KeyValue, Op, Store } from "../store";
import { unchanged } from "../store";
import type { Logger } from "../../api";
import { logTransferState } from "./log-transfer";
import { targetClient } from "./target-login";
import type { Worker } from "../workers";
import { aborted, sleep } from "../workers";

export interface MigrationMasterOptions {
  /** The leader's fenced store. */
  store: Store;
  cache: StateCache;
  sealer: Sealer;
  log: Logger;
  /** Where this controller's local machines run (`<dir>/<model>/<machine>`): the target adopts them there. */
  machinesDir: string;
  /** How often agents' reports are looked at while waiting, in ms. @default 250 */
  pollMs?: number;
  /** How often the target is probed while agents are awaited (in VALIDATION this heartbeats the staged copy), in ms. @default 5000 */
  probeMs?: number;
  /** How long the target may not answer before a migration not yet past VALIDATION aborts, in ms. @default 15000 */
  targetGoneMs?: number;
  /** How long an abort that the target never acknowledges is tried before giving up (only when it was never asked to activate). @default 10 minutes */
  abortGiveUpMs?: number;
}

/** A phase's outcome: where to go, with a note for the history (and, for ABORT, the failure). */
type Outcome = { to: MigrationPhase; note?: string; failure?: string; set?: Partial<MigrationDoc> } | undefined;

class AbortMigration extends Error {}
/** The migration left the phase being waited on (an abort asked by a user, another leader's move): look again. */
class PhaseMovedOn extends Error {}

const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 60_000;
/** The longest LOGTRANSFER waits for replicas to send their part of the logs. */
const LOGTRANSFER_WAIT_MS = 30_000;

/** A worker of the leader's: one drive loop per active migration, started as the cache shows it. */
export class MigrationMaster implements Worker {
  readonly name = "migration-master";
  private readonly driving = new Map<string, Promise<void>>();
  private readonly clients = new Map<string, ControllerClient>();

  constructor(private readonly o: MigrationMasterOptions) {}

  /** Until stopped; then every drive loop ends (at its next wait or step) before this resolves. */
  async run(signal: AbortSignal): Promise<void> {
    const unsubscribe = this.o.cache.subscribe(() => this.scan(signal));
    this.scan(signal);
    await aborted(signal);
    unsubscribe();
    // A step that waits on the target ends when its client closes.
    for (const c of this.clients.values()) c.close();
    while (this.driving.size > 0) await Promise.all([...this.driving.values()]);
  }

  private scan(signal: AbortSignal): void {
    if (signal.aborted) return;
    for (const m of this.o.cache.migrations.values()) {
      if (!migrationActive(m) || this.driving.has(m.model)) continue;
      const p = this.drive(m.model, signal)
        .catch((err: unknown) => this.o.log.error("migration master failed", { model: m.modelName, err }))
        .finally(() => {
          this.driving.delete(m.model);
          this.clients.get(m.id)?.close();
          this.clients.delete(m.id);
        });
      this.driving.set(m.model, p);
    }
  }

  private async drive(model: string, signal: AbortSignal): Promise<void> {
    let wait = RETRY_MIN_MS;
    while (!signal.aborted) {
      const kv = await this.o.store.get(keys.migration(model));
      if (!kv) return;
      const m = decode(docs.migration, kv.value);
      if (!migrationActive(m)) return;
      let outcome: Outcome;
      try {
        outcome = await this.step(m, signal);
        wait = RETRY_MIN_MS;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof PhaseMovedOn) continue;
        if (err instanceof AbortMigration) {
          outcome = { to: "ABORT", failure: err.message };
        } else {
          const why = err instanceof Error ? err.message : String(err);
          this.o.log.warn("migration step failed; retrying", {
            model: m.modelName,
            phase: m.phase,
            in_ms: wait,
            err: why,
          });
          await this.update(kv, { status: `retrying in ${Math.round(wait / 1000)} s: ${why}` }).catch(() => undefined);
          await sleep(wait, signal);
          wait = Math.min(wait * 2, RETRY_MAX_MS);
          continue;
        }
      }
      if (!outcome) continue;
      // Read again: the step may have written the document (status, activateAttempted).
      const latest = await this.o.store.get(keys.migration(model));
      if (latest) await this.move(latest, outcome);
    }
  }

  /** Does what phase `m.phase` needs and says where to go next (undefined: look again). */
  private async step(m: MigrationDoc, signal: AbortSignal): Promise<Outcome> {
    switch (m.phase) {
      case "QUIESCE": {
        await this.checkTarget(m);
        await this.waitForAgents(m, { failFast: true }, signal);
        return { to: "IMPORT" };
      }
      case "IMPORT": {
        // Asked again here (not remembered from QUIESCE): a leader that took over mid-move asks too.
        const version = await this.exportVersionOfTarget(m);
        const text = JSON.stringify(await this.exportForTarget(m, version));
        try {
          await this.target(m).call(
            "POST",
            `/v1/migrations/${m.id}/stage?source=${encodeURIComponent(this.o.cache.controller?.uuid ?? "")}`,
            JSON.parse(text),
          );
        } catch (err) {
          throw new AbortMigration(`the target could not stage the model: ${(err as Error).message}`);
        }
        const older =
          version < MODEL_EXPORT_VERSION
            ? ` as export format v${version}, the newest the target reads (this controller's is v${MODEL_EXPORT_VERSION})`
            : "";
        return { to: "VALIDATION", note: `${text.length} bytes staged${older}` };
      }
      case "VALIDATION": {
        await this.waitForAgents(m, { failFast: true }, signal);
        if (!m.activateAttempted) {
          const kv = await this.o.store.get(keys.migration(m.model));
          if (kv) await this.update(kv, { activateAttempted: true, status: "activating the model on the target" });
        }
        let answer: { missingUsers?: string[] };
        try {
          answer = await this.target(m).call<{ missingUsers?: string[] }>("POST", `/v1/migrations/${m.id}/activate`, {
            model: m.model,
          });
        } catch (err) {
          // A refusal is final; a lost answer is asked again (activation is answered twice alike).
          if (StewardError.isInstance(err) && !isUnavailable(err))
            throw new AbortMigration(`the target refused to activate the model: ${err.message}`);
          throw err;
        }
        const dropped = answer.missingUsers ?? [];
        return {
          to: "SUCCESS",
          ...(dropped.length > 0
            ? { note: `access not carried for users the target does not have: ${dropped.slice(0, 20).join(", ")}` }
            : {}),
        };
      }
      case "SUCCESS": {
        const missing = await this.waitForAgents(m, { failFast: false }, signal);
        return {
          to: "LOGTRANSFER",
          ...(missing.length > 0
            ? {
                note: `no SUCCESS report from ${missing.join(", ")}; those agents are redirected when they next connect`,
              }
            : {}),
        };
      }
      case "LOGTRANSFER":
        return this.waitForLogs(m, signal);
      case "REAP": {
        await this.reap(m);
        return undefined;
      }
      case "ABORT":
        return this.abort(m);
      default:
        return undefined;
    }
  }

  /**
   * Every live replica sends the records its agents gave it (log-transfer.ts); the move goes on when
   * all have reported, or after {@link LOGTRANSFER_WAIT_MS}: logs are worth a wait, not a stuck model.
   */
  private async waitForLogs(m: MigrationDoc, signal: AbortSignal): Promise<Outcome> {
    const deadline = Date.parse(m.phaseStartedAt) + LOGTRANSFER_WAIT_MS;
    for (;;) {
      const now = this.o.cache.migrations.get(m.model);
      if (now?.id !== m.id || now.phase !== m.phase) throw new PhaseMovedOn();
      const s = await logTransferState(this.o.store, this.o.cache, m);
      if (s.waitingFor.length === 0 || Date.now() > deadline) {
        const notes = [
          `${s.records} log records transferred from ${s.reported.length} replica${s.reported.length === 1 ? "" : "s"}`,
          ...s.failed.map((f) => `replica ${f.replica} could not send its records: ${f.reason}`),
          ...(s.waitingFor.length > 0 ? [`no answer from replica ${s.waitingFor.join(", ")}`] : []),
        ];
        return { to: "REAP", note: notes.join("; ") };
      }
      if (signal.aborted) throw new Error("the master stopped");
      await sleep(this.o.pollMs ?? 250, signal);
    }
  }

  /** The target answers as the controller the migration was started for, at a version that can take the model. */
  private async checkTarget(m: MigrationDoc): Promise<void> {
    let hello: ControllerHello;
    try {
      hello = await this.target(m).hello();
    } catch (err) {
      throw new AbortMigration(`the target controller ${m.target.name} cannot be reached: ${(err as Error).message}`);
    }
    if (hello.controller !== m.target.controller)
      throw new AbortMigration(
        `the controller at ${m.target.addresses.join(", ")} is ${hello.controller}, not ${m.target.controller}`,
      );
    if (olderMinor(hello.version, STEWARD_VERSION))
      throw new AbortMigration(`the target runs ${hello.version}, older than this controller's ${STEWARD_VERSION}`);
  }

  /**
   * Waits for every agent of the model to report on this phase. Fail-fast phases abort on the
   * first failure; all abort at the deadline (measured from the phase's start, Juju #12759), but
   * SUCCESS goes on without the missing, whom it returns.
   */
  private async waitForAgents(m: MigrationDoc, o: { failFast: boolean }, signal: AbortSignal): Promise<string[]> {
    const deadline = Date.parse(m.phaseStartedAt) + m.agentWaitSeconds * 1000;
    // Before SUCCESS a target that stops answering fails the move (its agents cannot report on it
    // either); after, it is the model's home and only the deadline counts.
    const watchTarget = m.phase === "QUIESCE" || m.phase === "VALIDATION";
    let lastProbe = Date.now();
    let unreachableSince: number | undefined;
    for (;;) {
      const now = this.o.cache.migrations.get(m.model);
      if (now?.id !== m.id || now.phase !== m.phase) throw new PhaseMovedOn();
      const r = await agentReports(this.o.store, this.o.cache, m);
      if (o.failFast && r.failed.length > 0)
        throw new AbortMigration(
          `agents failed ${m.phase}: ${r.failed.map((f) => `${f.machine} (${f.reason})`).join("; ")}`,
        );
      if (r.waitingFor.length === 0) return [];
      if (Date.now() > deadline) {
        if (!o.failFast) return r.waitingFor;
        throw new AbortMigration(
          `agents did not report ${m.phase} within ${m.agentWaitSeconds} s: ${r.waitingFor.slice(0, 10).join(", ")}${r.waitingFor.length > 10 ? ` and ${r.waitingFor.length - 10} more` : ""}`,
        );
      }
      if (watchTarget && Date.now() - lastProbe >= (this.o.probeMs ?? 5000)) {
        lastProbe = Date.now();
        const problem = await this.probeTarget(m);
        if (problem === undefined) unreachableSince = undefined;
        else if ((unreachableSince ??= lastProbe) && Date.now() - unreachableSince >= (this.o.targetGoneMs ?? 15_000))
          throw new AbortMigration(`the target stopped answering: ${problem}`);
      }
      if (signal.aborted) throw new Error("the master stopped");
      await sleep(this.o.pollMs ?? 250, signal);
    }
  }

  /**
   * Whether the target still answers (and, once it holds the staged copy, still wants it: the
   * probe is its heartbeat); the problem if not. A staging it no longer has is final.
   */
  private async probeTarget(m: MigrationDoc): Promise<string | undefined> {
    try {
      if (m.phase === "QUIESCE") await this.target(m).hello();
      else await this.target(m).call("POST", `/v1/migrations/${m.id}/heartbeat`, {});
      return undefined;
    } catch (err) {
      if (StewardError.isInstance(err) && err.code === "not-found" && !m.activateAttempted)
        throw new AbortMigration("the target no longer has the staged model (purged or aborted there)");
      return (err as Error).message;
    }
  }

  /**
   * The export format version to write for the target: the newest it reads, as its hello says (one of
   * the build before placements says nothing, and reads up to v2). A target that reads nothing this
   * controller writes fails the move.
   */
  private async exportVersionOfTarget(m: MigrationDoc): Promise<number> {
    const hello = await this.target(m).hello();
    try {
      return exportVersionFor(hello.modelExport);
    } catch (err) {
      throw new AbortMigration((err as Error).message);
    }
  }

  /**
   * The export in format `version`, with each local machine's directory, so the target supervises the
   * agent where it runs, and its secret values sealed to the key the target gives this migration (a
   * target whose format has no secrets is refused by exportForReader when the model holds any).
   */
  private async exportForTarget(m: MigrationDoc, version: number): Promise<WrittenModelExport> {
    let doc = await exportModel(this.o.store, m.model);
    for (const machine of Object.values(doc.documents.machine ?? {}) as MachineDoc[]) {
      if (contractOf(machine.substrate).onControllerHost && !machine.localDir)
        machine.localDir = join(this.o.machinesDir, m.model, machine.id);
    }
    if (version === MODEL_EXPORT_VERSION && countSecretValues(doc) > 0) {
      const key = await this.target(m).call<{ kind: string; publicKey: string }>(
        "GET",
        `/v1/migrations/${m.id}/sealing-key`,
      );
      if (key.kind !== "x25519") throw new AbortMigration(`the target offers a ${key.kind} key to seal secrets to`);
      doc = await sealExportSecrets(doc, this.o.sealer, { kind: "x25519", publicKey: key.publicKey });
    }
    try {
      return exportForReader(doc, version);
    } catch (err) {
      // What the target's format cannot carry (secrets, storage) will not change by retrying: the move fails, saying why.
      if (StewardError.isInstance(err) && err.code === "invalid-request") throw new AbortMigration(err.message);
      throw err;
    }
  }

  /** The model leaves this controller: every record of it in one transaction with the move to DONE; its machines are the target's now. */
  private async reap(m: MigrationDoc): Promise<void> {
    const kv = await this.o.store.get(keys.migration(m.model));
    if (!kv) return;
    const modelKv = await this.o.store.get(keys.model(m.model));
    // The record of the model's arrival here, if it came by migration, goes with it (it would refuse its return).
    const ops: Op[] = [
      { type: "deletePrefix", prefix: keys.migrationReportsOf(m.model) },
      { type: "delete", key: keys.migrationArrival(m.model) },
    ];
    const compare = [unchanged(kv.key, kv.modRevision)];
    // Who may still be told where the model went; grants cannot change while the migration holds it.
    const access = await this.o.store.range(keys.accessOf(m.model));
    const usersWithAccess = access.kvs.map((a) => a.key.slice(keys.accessOf(m.model).length)).sort();
    // And which agents: one that was down during the move is told where it went when it logs in here.
    const machines = (await this.o.store.range(keys.machinesOf(m.model))).kvs.map((kv) =>
      decode(docs.machine, kv.value),
    );
    const agentCredentials = Object.fromEntries(
      machines.flatMap((d) => (d.credentialHash ? [[d.id, d.credentialHash.slice(0, KEPT_HASH_DIGITS)]] : [])),
    );
    if (modelKv) {
      const model = decode(docs.model, modelKv.value);
      ops.push(...modelDeletes(m.model, model.name));
      compare.push(unchanged(modelKv.key, modelKv.modRevision));
      const credential = model.placement.credential;
      if (credential) {
        const c = await this.o.store.get(keys.credential(credential));
        if (c) {
          const cred = decode(docs.credential, c.value);
          compare.push(unchanged(c.key, c.modRevision));
          ops.push(put(docs.credential, credential, { ...cred, models: cred.models.filter((u) => u !== m.model) }));
        }
      }
    }
    const now = new Date().toISOString();
    const { sealedAuth: _, ...rest } = m;
    const done: MigrationDoc = {
      ...rest,
      usersWithAccess,
      agentCredentials,
      phase: "DONE",
      phaseStartedAt: now,
      endedAt: now,
      status: "the model lives on the target; this controller redirects its clients and agents there",
      history: [...m.history, { phase: "DONE", at: now }],
    };
    ops.push({ type: "put", key: kv.key, value: JSON.stringify(done) });
    const res = await this.o.store.txn({ compare, success: ops });
    if (res.succeeded) this.o.log.info("model migrated", { model: m.modelName, to: m.target.name, id: m.id });
  }

  private async abort(m: MigrationDoc): Promise<Outcome> {
    try {
      await this.target(m).call("DELETE", `/v1/migrations/${m.id}?model=${m.model}`);
      return { to: "ABORTDONE" };
    } catch (err) {
      if (StewardError.isInstance(err) && err.reason === "activated") {
        return { to: "SUCCESS", note: "the target had already activated the model: the migration goes on" };
      }
      const since = Date.parse(m.phaseStartedAt);
      if (!m.activateAttempted && Date.now() - since > (this.o.abortGiveUpMs ?? 10 * 60_000)) {
        return {
          to: "ABORTDONE",
          note: `the target never answered the abort (${(err as Error).message}); it purges the staged copy itself once nobody heartbeats it`,
        };
      }
      throw err;
    }
  }

  /** One phase change, checked against the document as read (another leader may have moved it). */
  private async move(kv: KeyValue, outcome: NonNullable<Outcome>): Promise<void> {
    const m = decode(docs.migration, kv.value);
    if (!canMove(m.phase, outcome.to)) return;
    const now = new Date().toISOString();
    const over = outcome.to === "ABORTDONE" || outcome.to === "DONE";
    const { sealedAuth, ...rest } = m;
    const next: MigrationDoc = {
      ...rest,
      ...(over ? {} : sealedAuth ? { sealedAuth } : {}),
      ...outcome.set,
      phase: outcome.to,
      phaseStartedAt: now,
      status: describePhase(outcome.to),
      history: [
        ...m.history,
        {
          phase: outcome.to,
          at: now,
          ...((outcome.note ?? outcome.failure) ? { note: outcome.note ?? outcome.failure } : {}),
        },
      ],
      ...(outcome.failure && !m.failure ? { failure: outcome.failure } : {}),
      ...(over ? { endedAt: now } : {}),
    };
    // An aborted migration's reports are of no more use (the reap takes them with the model).
    const cleanup: Op[] =
      outcome.to === "ABORTDONE" ? [{ type: "deletePrefix", prefix: keys.migrationReportsOf(m.model) }] : [];
    const res = await this.o.store.txn({
      compare: [unchanged(kv.key, kv.modRevision)],
      success: [{ type: "put", key: kv.key, value: JSON.stringify(next) }, ...cleanup],
    });
    if (res.succeeded)
      this.o.log.info("migration phase", {
        model: m.modelName,
        from: m.phase,
        to: outcome.to,
        ...(outcome.failure ? { failure: outcome.failure } : {}),
        ...(outcome.note ? { note: outcome.note } : {}),
      });
  }

  private async update(kv: KeyValue, change: Partial<MigrationDoc>): Promise<void> {
    const m = decode(docs.migration, kv.value);
    await this.o.store.txn({
      compare: [unchanged(kv.key, kv.modRevision)],
      success: [{ type: "put", key: kv.key, value: JSON.stringify({ ...m, ...change }) }],
    });
  }

  private target(m: MigrationDoc): ControllerClient {
    let c = this.clients.get(m.id);
    if (!c) this.clients.set(m.id, (c = targetClient(m, this.o.sealer)));
    return c;
  }
}

export function describePhase(p: MigrationPhase): string {
  switch (p) {
    case "QUIESCE":
      return "agents are finishing their hooks and checking they can reach the target";
    case "IMPORT":
      return "staging the model on the target";
    case "VALIDATION":
      return "agents are checking the staged model against what they hold";
    case "SUCCESS":
      return "the model is live on the target; agents are switching to it";
    case "LOGTRANSFER":
      return "sending the model's recent logs to the target";
    case "REAP":
      return "removing the model from this controller";
    case "DONE":
      return "the model lives on the target";
    case "ABORT":
      return "aborting: taking the staged copy away from the target";
    case "ABORTDONE":
      return "aborted: the model stays on this controller";
  }
}
