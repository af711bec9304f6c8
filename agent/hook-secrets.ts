/**
 * {@link HookSecrets}: the secrets of one running hook (issue 33). The secret-* tools' changes are
 * buffered here and go with the hook's commit (nothing if it fails), and the hook reads its own
 * writes: an owner's `secret-get` after `secret-set` sees the new values, a secret added in the hook
 * is readable at once. Values are held in memory for the hook only and never logged.
 */
import type { SecretChange, SecretInfo, UnitSecretView, UnitView } from "../api/core";
import { ownerText } from "../api/core";
import type { SecretAccess, SecretRead } from "./hook-tools/tool-spec";

/** One revision's values as `secret.get` answers them. */
interface SecretGetAnswer {
  uri: string;
  revision: number;
  values: Record<string, string>;
}

type Call = <T>(method: string, params: unknown) => Promise<T>;

export class HookSecrets implements SecretAccess {
  private readonly changes: SecretChange[] = [];
  /** Content this hook wrote (added or set), by uri: what the owner reads back. */
  private readonly written = new Map<string, SecretRead>();
  /** What this hook read as a consumer, by uri: a second read without --refresh/--peek answers the same. */
  private readonly read = new Map<string, SecretRead>();
  private readonly removed = new Set<string>();

  constructor(
    private readonly unit: string,
    private readonly view: () => UnitView,
    private readonly call: Call,
  ) {}

  list(): UnitSecretView[] {
    const out = new Map<string, UnitSecretView>();
    for (const sv of this.view().secrets ?? []) out.set(sv.uri, { ...sv });
    for (const c of this.changes) {
      if (c.op === "add")
        out.set(c.uri, { uri: c.uri, owner: true, latest: 1, ...(c.label ? { label: c.label } : {}) });
      else if (c.op === "set" && c.label !== undefined && out.has(c.uri)) out.get(c.uri)!.label = c.label;
      else if (c.op === "track" && c.label !== undefined && out.has(c.uri)) out.get(c.uri)!.label = c.label;
    }
    for (const uri of this.removed) out.delete(uri);
    return [...out.values()].sort((a, b) => a.uri.localeCompare(b.uri));
  }

  async get(uri: string, how: { peek?: boolean; refresh?: boolean; label?: string } = {}): Promise<SecretRead> {
    const own = this.written.get(uri);
    if (own) return { revision: own.revision, values: { ...own.values } };
    const sv = this.list().find((s) => s.uri === uri);
    if (sv?.owner) return this.fetch(uri, "latest");
    const before = this.read.get(uri);
    if (before && !how.peek && !how.refresh) {
      if (how.label !== undefined) this.track(uri, before.revision, how.label);
      return before;
    }
    const got = await this.fetch(uri, how.peek || how.refresh ? "latest" : "tracked");
    if (how.peek) return got;
    // A first read, a refresh or a consumer's label moves the unit's tracked revision (the controller records it with the commit).
    if (how.refresh || how.label !== undefined || sv?.tracked !== got.revision)
      this.track(uri, got.revision, how.label);
    this.read.set(uri, got);
    return got;
  }

  async info(uri: string): Promise<SecretInfo> {
    const added = this.changes.find((c): c is Extract<SecretChange, { op: "add" }> => c.op === "add" && c.uri === uri);
    if (added) {
      const now = new Date().toISOString();
      const v = this.view();
      return {
        uri,
        ...(added.label !== undefined ? { label: added.label } : {}),
        ...(added.description !== undefined ? { description: added.description } : {}),
        owner: ownerText(
          added.owner === "application" ? { kind: "application", app: v.app } : { kind: "unit", unit: this.unit },
        ),
        latestRevision: 1,
        rotate: added.rotate ?? "never",
        ...(added.expireAt ? { expireAt: added.expireAt } : {}),
        createdAt: now,
        updatedAt: now,
        grants: [],
        revisions: [
          { revision: 1, createdAt: now, ...(added.expireAt ? { expireAt: added.expireAt } : {}), trackedBy: [] },
        ],
      };
    }
    return this.call<SecretInfo>("secret.info", { unit: this.unit, uri });
  }

  change(c: SecretChange): void {
    if (c.op === "track") return this.track(c.uri, c.revision, c.label);
    this.changes.push(c);
    if (c.op === "add") this.written.set(c.uri, { revision: 1, values: { ...c.content } });
    else if (c.op === "set" && c.content) {
      const latest = this.written.get(c.uri)?.revision ?? this.list().find((s) => s.uri === c.uri)?.latest ?? 0;
      this.written.set(c.uri, { revision: latest + 1, values: { ...c.content } });
    } else if (c.op === "remove" && c.revision === undefined) {
      this.written.delete(c.uri);
      this.removed.add(c.uri);
    }
  }

  /** The changes for the hook's commit, in the order the hook made them (absent: none). */
  pending(): SecretChange[] | undefined {
    return this.changes.length > 0 ? [...this.changes] : undefined;
  }

  /** One track change per secret: the latest read wins, keeping a label an earlier one gave. */
  private track(uri: string, revision: number, label: string | undefined): void {
    const at = this.changes.findIndex((c) => c.op === "track" && c.uri === uri);
    const earlier = at >= 0 ? (this.changes[at] as Extract<SecretChange, { op: "track" }>) : undefined;
    if (at >= 0) this.changes.splice(at, 1);
    const named = label ?? earlier?.label;
    this.changes.push({ op: "track", uri, revision, ...(named !== undefined ? { label: named } : {}) });
  }

  private async fetch(uri: string, which: "tracked" | "latest"): Promise<SecretRead> {
    const got = await this.call<SecretGetAnswer>("secret.get", { unit: this.unit, uri, which });
    return { revision: got.revision, values: got.values };
  }
}
