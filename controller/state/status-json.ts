/**
 * {@link StatusRenderer} answers status requests with the JSON text of {@link buildModelStatus}
 * without building and serialising the whole document each time: every unit's and machine's
 * fragment is kept, and reused while the documents it was made from are the same objects (the cache
 * replaces a document on every change, so identity says "unchanged"). A request then only joins
 * fragments; the unfiltered document is also kept whole until the model's revision moves.
 */
import type { ApplicationStatusView, MachineStatusView, ModelStatus, StatusFilter, UnitStatusView } from "../../api";
import { statusToColumns } from "../../api";
import type { ModelIndex, StateCache } from "./cache";
import type { ApplicationDoc, MachineDoc, UnitDoc } from "./documents";
import type { StatusSelection } from "./views";
import { storageIdsOf } from "./storage-docs";
import {
  applicationStatusView,
  machineStatusView,
  modelStatusHeader,
  selectStatus,
  selectedIntegrations,
  sortedMachines,
  unitStatusView,
  unitsByApplication,
} from "./views";

/** A rendered piece and what it was rendered from, compared by identity. */
interface Fragment<V> {
  inputs: readonly unknown[];
  view: V;
  /** `"key":{...}`, ready to join into its object. */
  json: string;
}

/** An application's text around its units, and its units' fragments in status order, as of `key`. */
interface ApplicationFragment {
  key: string;
  docs: readonly UnitDoc[];
  units: Fragment<UnitStatusView>[];
  /** The application's view with no units listed (its status is still derived from all of them). */
  own: ApplicationStatusView;
  /** `"name":{...,"units":{` and what follows the units. */
  head: string;
  tail: string;
}

interface ModelFragments {
  units: Map<string, Fragment<UnitStatusView>>;
  apps: Map<string, ApplicationFragment>;
  machines: Map<string, Fragment<MachineStatusView>>;
  /** Units by application and machines, in status order, as of a viewRevision (units and machines are among what moves it). */
  order?: { viewRevision: number; byApp: Map<string, UnitDoc[]>; machines: MachineDoc[] };
  /** The unfiltered document up to (not including) its timestamp, and what it was built at. */
  whole?: Whole & { text: string; bytes?: Buffer };
  /** The same in the compact form (units and machines as column tables), as UTF-8. */
  columns?: Whole & { bytes: Buffer };
}

/** What an unfiltered document was built at: it stands while these do. */
interface Whole {
  revision: number;
  operators: number;
  controller: string;
}

/** See {@link StatusRenderer.parts}; applications have no units listed. */
export interface StatusParts {
  model: ModelStatus["model"];
  applications: Map<string, ApplicationStatusView>;
  units: Map<string, UnitStatusView>;
  machines: Map<string, MachineStatusView>;
  integrations: ModelStatus["integrations"];
}

const sameInputs = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a.length === b.length && a.every((v, i) => v === b[i]);

export class StatusRenderer {
  // Keyed by the index object: a cache resync builds new indexes, and old fragments go with the old.
  private readonly byModel = new WeakMap<ModelIndex, ModelFragments>();

  constructor(private readonly cache: StateCache) {}

  /** The model's status (narrowed by `filter`) as JSON text, equal to JSON.stringify(buildModelStatus(...)). */
  render(idx: ModelIndex, filter?: StatusFilter, now = new Date()): string {
    const { body, whole } = this.body(idx, filter);
    return (whole?.text ?? body) + timestampTail(now);
  }

  /**
   * The same as UTF-8 bytes, for the wire: the unchanged whole document is encoded once, not per
   * request (encoding and measuring 4 MiB of text cost ~10 ms a read at 10,000 units).
   */
  renderBytes(idx: ModelIndex, filter?: StatusFilter, now = new Date()): Buffer {
    const { body, whole } = this.body(idx, filter);
    const tail = Buffer.from(timestampTail(now));
    if (!whole) return Buffer.concat([Buffer.from(body!), tail]);
    whole.bytes ??= Buffer.from(whole.text);
    return Buffer.concat([whole.bytes, tail]);
  }

  /**
   * The compact form ({@link statusToColumns}) as UTF-8 JSON: what the API client asks for. Built
   * from the same kept unit and machine views; the unfiltered one is kept until the model changes.
   */
  renderColumnsBytes(idx: ModelIndex, filter?: StatusFilter, now = new Date()): Buffer {
    const frags = this.fragments(idx);
    const sel = selectStatus(idx, filter);
    const tail = Buffer.from(timestampTail(now));
    if (!sel && this.current(idx, frags.columns)) return Buffer.concat([frags.columns!.bytes, tail]);
    const { byApp, machines: sorted } = this.order(idx, frags);
    const applications: Record<string, ApplicationStatusView> = {};
    for (const app of idx.apps.values()) {
      if (sel && !sel.app(app.name)) continue;
      const docs = byApp.get(app.name) ?? [];
      const a = this.applicationFragment(idx, frags, app, docs);
      const units: Record<string, UnitStatusView> = {};
      for (let i = 0; i < docs.length; i++) if (!sel || sel.unit(docs[i]!)) units[docs[i]!.name] = a.units[i]!.view;
      applications[app.name] = { ...a.own, units };
    }
    const machines: Record<string, MachineStatusView> = {};
    for (const m of sorted) if (!sel || sel.machine(m.id)) machines[m.id] = this.machine(idx, frags, m).view;
    const doc: Omit<ModelStatus, "timestamp"> = {
      model: modelStatusHeader(this.cache, idx),
      applications,
      machines,
      integrations: selectedIntegrations(idx, sel),
    };
    const bytes = Buffer.from(JSON.stringify(statusToColumns(doc as ModelStatus)).slice(0, -1));
    if (!sel) {
      frags.columns = { ...this.stamp(idx), bytes };
      this.prune(idx, frags);
    }
    return Buffer.concat([bytes, tail]);
  }

  /**
   * The model's status in parts, for a live feed to diff: each unit's and machine's view is the same
   * object for as long as it is unchanged, so comparing identities finds what changed.
   */
  parts(idx: ModelIndex): StatusParts {
    const frags = this.fragments(idx);
    const { byApp, machines: sorted } = this.order(idx, frags);
    const applications = new Map<string, ApplicationStatusView>();
    const units = new Map<string, UnitStatusView>();
    for (const app of idx.apps.values()) {
      const a = this.applicationFragment(idx, frags, app, byApp.get(app.name) ?? []);
      applications.set(app.name, a.own);
      for (const f of a.units) units.set(f.view.name, f.view);
    }
    const machines = new Map<string, MachineStatusView>();
    for (const m of sorted) machines.set(m.id, this.machine(idx, frags, m).view);
    this.prune(idx, frags);
    return {
      model: modelStatusHeader(this.cache, idx),
      applications,
      units,
      machines,
      integrations: selectedIntegrations(idx, undefined),
    };
  }

  private fragments(idx: ModelIndex): ModelFragments {
    let frags = this.byModel.get(idx);
    if (!frags) this.byModel.set(idx, (frags = { units: new Map(), apps: new Map(), machines: new Map() }));
    return frags;
  }

  private stamp(idx: ModelIndex): Whole {
    return {
      revision: idx.revision,
      operators: this.cache.operators.size,
      controller: this.cache.controller?.name ?? "",
    };
  }

  /** Whether a kept unfiltered document still shows the model as it is. */
  private current(idx: ModelIndex, w: Whole | undefined): boolean {
    const now = this.stamp(idx);
    return (
      w !== undefined && w.revision === now.revision && w.operators === now.operators && w.controller === now.controller
    );
  }

  /** Everything but the timestamp: the kept whole document when nothing is filtered, else a fresh body. */
  private body(
    idx: ModelIndex,
    filter: StatusFilter | undefined,
  ): { body?: string; whole?: NonNullable<ModelFragments["whole"]> } {
    const frags = this.fragments(idx);
    const sel = selectStatus(idx, filter);
    if (!sel && this.current(idx, frags.whole)) return { whole: frags.whole };
    const text = this.build(idx, frags, sel);
    if (sel) return { body: text };
    frags.whole = { ...this.stamp(idx), text };
    this.prune(idx, frags);
    return { whole: frags.whole };
  }

  private build(idx: ModelIndex, frags: ModelFragments, sel: StatusSelection | undefined): string {
    const { byApp, machines: sorted } = this.order(idx, frags);
    const apps: string[] = [];
    for (const app of idx.apps.values()) {
      if (!sel || sel.app(app.name)) apps.push(this.application(idx, frags, app, byApp.get(app.name) ?? [], sel));
    }
    const machines: string[] = [];
    for (const m of sorted) if (!sel || sel.machine(m.id)) machines.push(this.machine(idx, frags, m).json);
    const header: Pick<ModelStatus, "model"> = { model: modelStatusHeader(this.cache, idx) };
    return `${JSON.stringify(header).slice(0, -1)},"applications":{${apps.join(",")}},"machines":{${machines.join(",")}},"integrations":${JSON.stringify(selectedIntegrations(idx, sel))}`;
  }

  /** Sorting 10,000 units and machines per read is most of a filtered read's work: kept until they change. */
  private order(idx: ModelIndex, frags: ModelFragments): NonNullable<ModelFragments["order"]> {
    if (frags.order?.viewRevision !== idx.viewRevision)
      frags.order = { viewRevision: idx.viewRevision, byApp: unitsByApplication(idx), machines: sortedMachines(idx) };
    return frags.order;
  }

  private application(
    idx: ModelIndex,
    frags: ModelFragments,
    app: ApplicationDoc,
    docs: readonly UnitDoc[],
    sel: StatusSelection | undefined,
  ): string {
    const a = this.applicationFragment(idx, frags, app, docs);
    const listed = sel ? a.units.filter((_, i) => sel.unit(docs[i]!)) : a.units;
    return `${a.head}${listed.map((f) => f.json).join(",")}${a.tail}`;
  }

  /**
   * Kept while the model's revision stands (every change to what status shows moves it), so a
   * filtered read of one unit does not re-check 10,000 units' fragments to derive the application's status.
   */
  private applicationFragment(
    idx: ModelIndex,
    frags: ModelFragments,
    app: ApplicationDoc,
    docs: readonly UnitDoc[],
  ): ApplicationFragment {
    const key = `${idx.revision}/${this.cache.operators.size}`;
    const old = frags.apps.get(app.name);
    if (old && old.key === key && old.docs === docs) return old;
    const units = docs.map((u) => this.unit(idx, frags, u));
    // The application's own fields are few; its units are spliced in as their cached text.
    const view = applicationStatusView(
      this.cache,
      idx,
      app,
      units.map((f) => f.view),
      [],
    );
    const own = JSON.stringify(view);
    const marker = `"units":{}`;
    const at = own.indexOf(marker, own.indexOf(`"scale":`));
    const a = {
      key,
      docs,
      units,
      own: view,
      head: `${JSON.stringify(app.name)}:${own.slice(0, at)}"units":{`,
      tail: `}${own.slice(at + marker.length)}`,
    };
    frags.apps.set(app.name, a);
    return a;
  }

  private unit(idx: ModelIndex, frags: ModelFragments, u: UnitDoc): Fragment<UnitStatusView> {
    // Everything unitStatusView reads, by identity (or value, for the derived booleans).
    const inputs = [
      u,
      idx.unitStatus.get(u.name),
      idx.presence.has(u.machine),
      idx.machines.get(u.machine)?.life,
      idx.leaders.get(u.app)?.unit === u.name,
      idx.ports.get(u.name),
      idx.machineInfo.get(u.machine)?.address,
      idx.machineInstall.get(u.machine),
      storageIdsOf(idx.storage, u.name).join(","),
    ];
    const old = frags.units.get(u.name);
    if (old && sameInputs(old.inputs, inputs)) return old;
    const view = unitStatusView(idx, u);
    const f = { inputs, view, json: `${JSON.stringify(u.name)}:${JSON.stringify(view)}` };
    frags.units.set(u.name, f);
    return f;
  }

  private machine(idx: ModelIndex, frags: ModelFragments, m: MachineDoc): Fragment<MachineStatusView> {
    const unitsHere = idx.unitsByMachine.get(m.id);
    const inputs = [
      m,
      idx.machineInfo.get(m.id),
      idx.presence.get(m.id),
      idx.machineInstall.get(m.id),
      unitsHere ? [...unitsHere].join(",") : "",
    ];
    const old = frags.machines.get(m.id);
    if (old && sameInputs(old.inputs, inputs)) return old;
    const view = machineStatusView(idx, m);
    const f = { inputs, view, json: `${JSON.stringify(m.id)}:${JSON.stringify(view)}` };
    frags.machines.set(m.id, f);
    return f;
  }

  /** Drops fragments of units and machines that are gone (after a full build, which saw them all). */
  private prune(idx: ModelIndex, frags: ModelFragments): void {
    for (const name of frags.units.keys()) if (!idx.units.has(name)) frags.units.delete(name);
    for (const id of frags.machines.keys()) if (!idx.machines.has(id)) frags.machines.delete(id);
    for (const name of frags.apps.keys()) if (!idx.apps.has(name)) frags.apps.delete(name);
  }
}

const timestampTail = (now: Date): string => `,"timestamp":${JSON.stringify(now.toISOString())}}`;

const renderers = new WeakMap<StateCache, StatusRenderer>();

/** The renderer shared by every reader of this cache. */
function rendererOf(cache: StateCache): StatusRenderer {
  let r = renderers.get(cache);
  if (!r) renderers.set(cache, (r = new StatusRenderer(cache)));
  return r;
}

/** The model's status as JSON text. */
export function renderModelStatus(cache: StateCache, idx: ModelIndex, filter?: StatusFilter, now = new Date()): string {
  return rendererOf(cache).render(idx, filter, now);
}

/** The model's status as UTF-8 JSON, for an HTTP answer: plain, or with units and machines as column tables. */
export function renderModelStatusBytes(
  cache: StateCache,
  idx: ModelIndex,
  filter?: StatusFilter,
  now = new Date(),
  form: "plain" | "columns" = "plain",
): Buffer {
  const r = rendererOf(cache);
  return form === "columns" ? r.renderColumnsBytes(idx, filter, now) : r.renderBytes(idx, filter, now);
}

/** The model's status in parts (see {@link StatusRenderer.parts}). */
export function modelStatusParts(cache: StateCache, idx: ModelIndex): StatusParts {
  return rendererOf(cache).parts(idx);
}
