/**
 * The store's migration to this build's format (api STORE_FORMAT), run by the controller leader
 * once every replica runs a build that reads that format, so no replica is left that would misread
 * what it writes. It first bumps the controller document's format (replicas then stop writing the
 * previous shapes, and a replica of an older build refuses to start on the store), then rewrites
 * every document of a kind whose stored shape changed, 64 to a transaction, each compared with the
 * revision it read (a document changed meanwhile is read again, never overwritten). A leader
 * that dies part way leaves the record without `doneAt`: the next one resumes from the start of its
 * scan, which skips what is already in the current shape.
 */
import { STORE_FORMAT } from "../../api";
import type { KeyValue, Op, Store } from "../store";
import { unchanged } from "../store";
import type { StoreMigrationDoc } from "./documents";
import type { ControllerUpgrade } from "../../api";
import type { MemberDoc, ReplicaDoc } from "./cluster-docs";
import { decode, docs, put } from "./doc-kinds";
import { keys } from "./keys";
import type { KindSpec } from "./registry";
import { KINDS, classifyKey, storedValue } from "./registry";

/** Documents rewritten per transaction: well under etcd's 128 operations per transaction, and its request size. */
const BATCH = 64;

/** Kinds whose stored documents a migration to `to` rewrites: those it stops writing in two shapes. */
const kindsRewrittenAt = (from: number, to: number): KindSpec[] =>
  KINDS.filter((k) => k.encodeBefore !== undefined && k.encodeBefore > from && k.encodeBefore <= to);

/**
 * The prefix holding every document of `spec`: its literal segments up to the first model or id
 * (`/models/` for a model kind, so one range reads what a cache resync reads), or its key.
 */
function scanPrefix(spec: KindSpec): string {
  const literal = spec.path.findIndex((s) => typeof s !== "string");
  const head = (literal < 0 ? spec.path : spec.path.slice(0, literal)) as string[];
  return "/" + head.join("/") + (literal < 0 ? "" : "/");
}

/**
 * Why the store cannot be migrated to `to` yet, if so: a replica up runs a build that does not read
 * it, a member of the cluster is down (it may come back on the older build), or an upgrade is still
 * running (its last replica may yet fail its gate and go back to the older release, which the
 * migrated store would then refuse).
 */
export function migrationWaitsFor(
  cluster: {
    replicas: { values(): Iterable<ReplicaDoc> };
    clusterMembers: { values(): Iterable<MemberDoc> };
    upgrade?: Pick<ControllerUpgrade, "state" | "to"> | undefined;
  },
  to = STORE_FORMAT,
): string | undefined {
  const replicas = [...cluster.replicas.values()];
  const behind = replicas.filter((r) => (r.storeFormat ?? 1) < to);
  if (behind.length > 0)
    return `replica ${behind.map((r) => `${r.id} (${r.version ?? "unknown version"})`).join(", ")} runs a release that does not read store format ${to}`;
  const up = new Set(replicas.map((r) => r.id));
  const down = [...cluster.clusterMembers.values()].filter((m) => m.state === "member" && !up.has(m.name));
  if (down.length > 0) return `replica ${down.map((m) => m.name).join(", ")} is down`;
  if (cluster.upgrade?.state === "running") return `the upgrade to ${cluster.upgrade.to} is still running`;
  return undefined;
}

export interface MigrationPass {
  /** Set when the pass ran a migration to its end (or found one done). */
  migration?: StoreMigrationDoc;
  /** Documents rewritten by this pass. */
  rewritten: number;
}

export class StoreMigrator {
  constructor(
    private readonly store: Store,
    private readonly replica: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Migrates the store to `to` (this build's format) when it is older or its migration unfinished;
   * the caller has checked that every replica reads `to` ({@link migrationWaitsFor}).
   */
  async run(signal?: AbortSignal, to = STORE_FORMAT): Promise<MigrationPass> {
    const begun = await this.begin(to);
    if (!begun) return { rewritten: 0 };
    if (begun.doneAt) return { migration: begun, rewritten: 0 };
    const record = { ...begun, replica: this.replica };
    let rewritten = 0;
    for (const spec of kindsRewrittenAt(record.from, record.to)) {
      rewritten += await this.rewriteKind(spec, record.to, signal);
      await this.record({ ...record, rewritten: record.rewritten + rewritten });
    }
    const done = { ...record, rewritten: record.rewritten + rewritten, doneAt: this.stamp() };
    await this.record(done);
    return { migration: done, rewritten };
  }

  /** The record to work to: a new one with the format bumped, the unfinished one, or none (nothing to do). */
  private async begin(to: number): Promise<StoreMigrationDoc | undefined> {
    for (;;) {
      const [info, existing] = await Promise.all([
        this.store.get(keys.controller),
        this.store.get(keys.storeMigration),
      ]);
      if (!info) return undefined;
      const controller = decode(docs.controller, info.value);
      const current = existing ? decode(docs.storeMigration, existing.value) : undefined;
      if (controller.schemaVersion >= to) return current?.to === controller.schemaVersion ? current : undefined;
      const record: StoreMigrationDoc = {
        from: controller.schemaVersion,
        to,
        startedAt: this.stamp(),
        rewritten: 0,
        replica: this.replica,
        updatedAt: this.stamp(),
      };
      const res = await this.store.txn({
        compare: [unchanged(keys.controller, info.modRevision)],
        success: [put(docs.controller, { ...controller, schemaVersion: to }), put(docs.storeMigration, record)],
      });
      if (res.succeeded) return record;
    }
  }

  private async rewriteKind(spec: KindSpec, to: number, signal?: AbortSignal): Promise<number> {
    let rewritten = 0;
    for (;;) {
      signal?.throwIfAborted();
      const { kvs } = await this.store.range(scanPrefix(spec));
      const stale = kvs.filter(
        (kv) => classifyKey(kv.key)?.kind === spec && kv.value !== this.current(spec, kv.value, to),
      );
      if (stale.length === 0) return rewritten;
      for (let i = 0; i < stale.length; i += BATCH) {
        signal?.throwIfAborted();
        rewritten += await this.rewrite(spec, stale.slice(i, i + BATCH), to);
      }
    }
  }

  /**
   * Rewrites `batch` in one transaction when none changed since it was read; otherwise one by one, so
   * only those changed meanwhile are left for the next scan (which reads them again).
   */
  private async rewrite(spec: KindSpec, batch: KeyValue[], to: number): Promise<number> {
    const put = (kv: KeyValue): Op => ({ type: "put", key: kv.key, value: this.current(spec, kv.value, to) });
    const all = await this.store.txn({
      compare: batch.map((kv) => unchanged(kv.key, kv.modRevision)),
      success: batch.map(put),
    });
    if (all.succeeded) return batch.length;
    let rewritten = 0;
    for (const kv of batch) {
      const res = await this.store.txn({ compare: [unchanged(kv.key, kv.modRevision)], success: [put(kv)] });
      if (res.succeeded) rewritten++;
    }
    return rewritten;
  }

  /** What `raw`, a stored document of `spec`, is in the shape format `to` stores. */
  private current(spec: KindSpec, raw: string, to: number): string {
    const parsed = JSON.parse(raw) as unknown;
    return storedValue(spec, spec.upgrade ? spec.upgrade(parsed) : parsed, to);
  }

  private async record(doc: StoreMigrationDoc): Promise<void> {
    await this.store.put(
      keys.storeMigration,
      JSON.stringify({ ...doc, replica: this.replica, updatedAt: this.stamp() }),
    );
  }

  private stamp(): string {
    return this.now().toISOString();
  }
}
