/**
 * Integrations: creating them by matching endpoints, ending them, units entering and leaving them,
 * and the atomic commit of what a hook wrote (relation data, ports, scope, storage, secrets) at the hook's end.
 */
import type { HookCommit, OperatorMeta } from "../../api";
import { DATABAG_LIMIT_BYTES, StewardError, alreadyExists, invalidRequest, notFound } from "../../api";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { ApplicationDoc, DataBag, RelationDoc, RelationEndpoint, UnitDoc } from "./documents";
import { keys } from "./keys";
import { docs, put, putBack } from "./doc-kinds";
import { StoreTxns } from "./txn";
import { addedStorageOps } from "./storage-attachments";
import type { SecretOps } from "./secret-ops";

interface Candidate {
  a: RelationEndpoint;
  b: RelationEndpoint;
}

export class RelationOps extends StoreTxns {
  /** `secrets`: what applies a hook's secret changes (it holds the controller's sealer); without it a commit with some is refused. */
  constructor(
    store: Store,
    now?: () => Date,
    private readonly secrets?: SecretOps,
  ) {
    super(store, now);
  }

  /**
   * Integrates two applications. `refA`/`refB` are `app` or `app:endpoint`; endpoints are matched by
   * interface, a provider with a requirer. No match or more than one is an error that lists them.
   */
  async integrate(uuid: string, refA: string, refB: string): Promise<{ id: number; revision: number; key: string }> {
    const [appA, epA] = refA.split(":") as [string, string | undefined];
    const [appB, epB] = refB.split(":") as [string, string | undefined];
    if (appA === appB)
      throw invalidRequest(
        `cannot integrate ${appA} with itself; peer relations form by themselves from the operator's "peers"`,
      );
    return this.retry(`integrate ${refA} ${refB}`, async () => {
      const [a, b] = [await this.app(uuid, appA), await this.app(uuid, appB)];
      const [ma, mb] = [await this.meta(a.doc), await this.meta(b.doc)];
      const candidates = matches(appA, ma, epA, appB, mb, epB);
      if (candidates.length === 0) {
        throw invalidRequest(
          `no compatible endpoints between ${refA} and ${refB}: ${describeEndpoints(appA, ma)}; ${describeEndpoints(appB, mb)}. A provider and a requirer of the same interface can be integrated.`,
        );
      }
      if (candidates.length > 1) {
        throw invalidRequest(
          `${appA} and ${appB} can be integrated in more than one way: ${candidates.map((c) => `${c.a.app}:${c.a.endpoint} ${c.b.app}:${c.b.endpoint}`).join(", ")}; name the endpoints, e.g. steward integrate ${candidates[0]!.a.app}:${candidates[0]!.a.endpoint} ${candidates[0]!.b.app}:${candidates[0]!.b.endpoint}`,
        );
      }
      const c = candidates[0]!;
      const key = [`${c.a.app}:${c.a.endpoint}`, `${c.b.app}:${c.b.endpoint}`].sort().join(" ");
      const existing = await this.getAll(docs.relation, uuid);
      if (existing.some((r) => r.doc.key === key && r.doc.life === "alive")) throw alreadyExists("integration", key);
      for (const side of [c.a, c.b]) {
        const limit = (
          side.role === "provider" ? (side.app === appA ? ma : mb).provides : (side.app === appA ? ma : mb).requires
        )[side.endpoint]?.limit;
        const used = existing.filter(
          (r) =>
            r.doc.life === "alive" && r.doc.endpoints.some((e) => e.app === side.app && e.endpoint === side.endpoint),
        ).length;
        if (limit !== undefined && used >= limit)
          throw invalidRequest(
            `${side.app}:${side.endpoint} accepts at most ${limit} integration${limit === 1 ? "" : "s"} and has ${used}`,
          );
      }
      const seq = await this.store.get(keys.relationSeq(uuid));
      const id = Number(seq?.value ?? "0");
      const doc: RelationDoc = {
        id,
        key,
        endpoints: [c.a, c.b].sort((x, y) => (x.role === "provider" ? -1 : y.role === "provider" ? 1 : 0)),
        life: "alive",
        createdAt: this.stamp(),
      };
      return {
        compare: [
          unchanged(keys.app(uuid, appA), a.rev),
          unchanged(keys.app(uuid, appB), b.rev),
          unchanged(keys.relationSeq(uuid), seq?.modRevision ?? 0),
          ...existing.map((r) => unchanged(r.key, r.rev)),
        ],
        ops: [put(docs.relation, uuid, id, doc), { type: "put", key: keys.relationSeq(uuid), value: String(id + 1) }],
        result: { id, key },
      };
    });
  }

  /** Ends the integration between two applications (endpoints optional when only one exists). */
  async removeIntegration(uuid: string, refA: string, refB: string): Promise<{ revision: number; key: string }> {
    return this.retry(`remove integration ${refA} ${refB}`, async () => {
      const fits = (ref: string, e: RelationEndpoint): boolean => {
        const [app, ep] = ref.split(":");
        return e.app === app && (ep === undefined || e.endpoint === ep);
      };
      const found = (await this.getAll(docs.relation, uuid)).filter(
        (r) =>
          r.doc.life === "alive" &&
          r.doc.endpoints.length === 2 &&
          ((fits(refA, r.doc.endpoints[0]!) && fits(refB, r.doc.endpoints[1]!)) ||
            (fits(refB, r.doc.endpoints[0]!) && fits(refA, r.doc.endpoints[1]!))),
      );
      if (found.length === 0) throw notFound("integration", `${refA} ${refB}`);
      if (found.length > 1)
        throw invalidRequest(
          `${refA} and ${refB} are integrated more than once (${found.map((r) => r.doc.key).join("; ")}); name the endpoints`,
        );
      const r = found[0]!;
      return {
        compare: [unchanged(r.key, r.rev)],
        ops: [put(docs.relation, uuid, r.doc.id, { ...r.doc, life: "dying" })],
        result: { key: r.doc.key },
      };
    });
  }

  /**
   * Commits what one hook wrote, all or nothing: relation data (the unit's own bags; application bags
   * only while the unit leads), opened and closed ports, and the relations the unit entered.
   */
  async commitHook(uuid: string, machine: string, c: HookCommit): Promise<number> {
    const res = await this.retry(`commit hook of ${c.unit}`, async () => {
      const u = await this.get(docs.unit, uuid, c.unit);
      if (!u || u.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${c.unit} is not on machine ${machine}`);
      const compare: Compare[] = [unchanged(keys.unit(uuid, c.unit), u.rev)];
      const ops: Op[] = [];
      const relations = new Map<number, { doc: RelationDoc; rev: number }>();
      const relationOf = async (id: number): Promise<RelationDoc> => {
        let r = relations.get(id);
        if (!r) {
          const read = await this.get(docs.relation, uuid, id);
          if (!read || !read.doc.endpoints.some((e) => e.app === u.doc.app)) throw notFound("integration", String(id));
          relations.set(id, (r = read));
          compare.push(unchanged(keys.relation(uuid, id), read.rev));
        }
        return r.doc;
      };
      const bags = new Map<string, { key: string; data: DataBag; before: string; label: string }>();
      for (const w of c.relations) {
        await relationOf(w.relationId);
        const [kind, owner] = w.app ? [docs.appBag, u.doc.app] : [docs.unitBag, c.unit];
        const key = kind.key(uuid, w.relationId, owner);
        let bag = bags.get(key);
        if (!bag) {
          const cur = await this.get(kind, uuid, w.relationId, owner);
          compare.push(unchanged(key, cur?.rev ?? 0));
          bags.set(
            key,
            (bag = {
              key,
              data: { ...(cur?.doc ?? {}) },
              before: JSON.stringify(sortedBag(cur?.doc ?? {})),
              label: w.app ? `application ${u.doc.app}` : c.unit,
            }),
          );
          if (w.app) await this.requireLeader(uuid, u.doc, compare, "write the application databag");
        }
        for (const [k, v] of Object.entries(w.set)) {
          if (v === null || v === "") delete bag.data[k];
          else bag.data[k] = v;
        }
      }
      for (const bag of bags.values()) {
        const size = Buffer.byteLength(JSON.stringify(bag.data));
        if (size > DATABAG_LIMIT_BYTES)
          throw invalidRequest(
            `the databag of ${bag.label} would hold ${size} bytes; the limit is ${DATABAG_LIMIT_BYTES} bytes per databag`,
          );
        // Unchanged data is not written: its revision is what makes the other side run relation-changed.
        if (JSON.stringify(sortedBag(bag.data)) === bag.before) continue;
        ops.push(
          Object.keys(bag.data).length === 0
            ? { type: "delete", key: bag.key }
            : { type: "put", key: bag.key, value: JSON.stringify(bag.data) },
        );
      }
      if (c.ports && (c.ports.open.length > 0 || c.ports.close.length > 0)) {
        const cur = await this.get(docs.ports, uuid, c.unit);
        compare.push(unchanged(keys.ports(uuid, c.unit), cur?.rev ?? 0));
        const ports = new Set(cur?.doc ?? []);
        for (const p of c.ports.close) ports.delete(p);
        for (const p of c.ports.open) ports.add(p);
        ops.push(
          ports.size === 0
            ? { type: "delete", key: keys.ports(uuid, c.unit) }
            : put(docs.ports, uuid, c.unit, [...ports].sort()),
        );
      }
      for (const id of c.enterScope) {
        const r = await relationOf(id);
        if (r.life === "alive") ops.push(put(docs.scope, uuid, id, c.unit, { since: this.stamp() }));
      }
      // `storage-add`: made with the rest of the hook's writes, or not at all.
      if (c.storage && Object.keys(c.storage).length > 0)
        await addedStorageOps(this.store, uuid, u, c.storage, compare, ops, this.stamp());
      // The secret-* tools' changes: with the rest, or not at all.
      if (c.secrets && c.secrets.length > 0) {
        if (!this.secrets) throw new StewardError("internal", "this controller process does not apply secret changes");
        await this.secrets.hookChanges(uuid, u, c.secrets, compare, ops);
      }
      return { compare, ops, result: {} };
    });
    return res.revision;
  }

  /** A unit has departed and broken a relation: it leaves, and the other side sees it depart. */
  async leave(uuid: string, machine: string, unit: string, relationId: number): Promise<number> {
    const u = await this.get(docs.unit, uuid, unit);
    if (!u || u.doc.machine !== machine)
      throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
    const res = await this.store.txn({
      success: [
        { type: "delete", key: keys.scope(uuid, relationId, unit) },
        { type: "delete", key: keys.unitBag(uuid, relationId, unit) },
      ],
    });
    return res.revision;
  }

  /** Deletes a dying relation once every unit has left it, and the secret grants made over it. */
  async finishRelation(uuid: string, id: number): Promise<boolean> {
    const r = await this.get(docs.relation, uuid, id);
    if (!r || r.doc.life !== "dying") return false;
    const scope = await this.store.range(keys.scopePrefix(uuid, id));
    if (scope.kvs.length > 0) return false;
    // Secrets granted over it: the grants end with it (reads refuse them already; this drops them).
    const granted = (await this.getAll(docs.secret, uuid)).filter((s) => s.doc.grants.some((g) => g.relationId === id));
    const res = await this.store.txn({
      // No unit can enter meanwhile: entering checks, under a compare, that the relation is alive.
      compare: [unchanged(keys.relation(uuid, id), r.rev), ...granted.map((s) => unchanged(s.key, s.rev))],
      success: [
        { type: "delete", key: keys.relation(uuid, id) },
        { type: "deletePrefix", prefix: keys.relationDataPrefix(uuid, id) },
        { type: "deletePrefix", prefix: keys.scopePrefix(uuid, id) },
        ...granted.map((s) =>
          putBack(s, { ...s.doc, grants: s.doc.grants.filter((g) => g.relationId !== id), updatedAt: this.stamp() }),
        ),
      ],
    });
    return res.succeeded;
  }

  private async requireLeader(uuid: string, unit: UnitDoc, compare: Compare[], what: string): Promise<void> {
    const leader = await this.get(docs.leader, uuid, unit.app);
    if (leader?.doc.unit !== unit.name)
      throw new StewardError("forbidden", `${unit.name} is not the leader of ${unit.app}: only the leader may ${what}`);
    compare.push(unchanged(keys.leader(uuid, unit.app), leader.rev));
  }

  private async app(uuid: string, name: string): Promise<{ doc: ApplicationDoc; rev: number }> {
    const a = await this.get(docs.app, uuid, name);
    if (!a) throw notFound("application", name);
    if (a.doc.life !== "alive") throw invalidRequest(`application ${name} is being removed`);
    return a;
  }

  private async meta(app: ApplicationDoc): Promise<OperatorMeta> {
    const op = await this.get(docs.operator, app.operator.hash);
    if (!op) throw new StewardError("internal", `operator of ${app.name} is missing`);
    return op.doc.meta;
  }
}

export function sortedBag(b: DataBag): DataBag {
  return Object.fromEntries(Object.entries(b).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
}

function endpointsOf(app: string, meta: OperatorMeta, only?: string): RelationEndpoint[] {
  const out: RelationEndpoint[] = [];
  for (const [endpoint, def] of Object.entries(meta.provides))
    out.push({ app, endpoint, role: "provider", interface: def.interface });
  for (const [endpoint, def] of Object.entries(meta.requires))
    out.push({ app, endpoint, role: "requirer", interface: def.interface });
  return only === undefined ? out : out.filter((e) => e.endpoint === only);
}

function matches(
  appA: string,
  ma: OperatorMeta,
  epA: string | undefined,
  appB: string,
  mb: OperatorMeta,
  epB: string | undefined,
): Candidate[] {
  if (epA !== undefined && !(epA in ma.provides) && !(epA in ma.requires))
    throw invalidRequest(`${appA} has no endpoint "${epA}" to integrate (${describeEndpoints(appA, ma)})`);
  if (epB !== undefined && !(epB in mb.provides) && !(epB in mb.requires))
    throw invalidRequest(`${appB} has no endpoint "${epB}" to integrate (${describeEndpoints(appB, mb)})`);
  const out: Candidate[] = [];
  for (const a of endpointsOf(appA, ma, epA))
    for (const b of endpointsOf(appB, mb, epB)) {
      if (a.interface === b.interface && a.role !== b.role) out.push({ a, b });
    }
  return out;
}

function describeEndpoints(app: string, meta: OperatorMeta): string {
  const p = Object.entries(meta.provides).map(([e, d]) => `${e} (${d.interface})`);
  const r = Object.entries(meta.requires).map(([e, d]) => `${e} (${d.interface})`);
  return `${app} provides ${p.length > 0 ? p.join(", ") : "nothing"} and requires ${r.length > 0 ? r.join(", ") : "nothing"}`;
}
