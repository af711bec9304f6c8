/**
 * The fake API server's storage and write semantics, shared by its HTTP front and its in-process
 * controllers (which, like kube-controller-manager, go through the same rules). From the API
 * concepts page ("Resource versions", "Efficient detection of changes", "Server-side apply",
 * "Finalizers", "Garbage collection"):
 * - one resourceVersion counter for the whole server, bumped by every write and carried by the
 *   written object; a no-op update writes nothing and keeps the version;
 * - the last `historySize` changes are kept for watches; a watch from an older version is Expired
 *   (410); the counter is opaque to clients, but monotonic here as in etcd;
 * - create answers AlreadyExists, an update whose `metadata.resourceVersion` is stale Conflict
 *   (an update without one is unconditional), a missing object NotFound; `uid` and
 *   `creationTimestamp` are set on create and kept; `generation` (StatefulSets) starts at 1 and
 *   grows with each spec change; kinds with a `/status` subresource ignore `status` on create and
 *   on updates of the main resource, and their `/status` writes change only `status`;
 * - deletion: an object with finalizers gets `deletionTimestamp` and stays until they are removed
 *   (no finalizer may be added meanwhile); a scheduled pod is deleted gracefully (deletionTimestamp
 *   = now + grace, `deletionGracePeriodSeconds`) and removed once the kubelet reports its containers
 *   stopped, or at once with gracePeriodSeconds 0; propagationPolicy Background (the default)
 *   deletes dependents (by ownerReferences uid) after the owner, Foreground before it (finalizer
 *   `foregroundDeletion`), Orphan strips their ownerReferences; a namespace is Terminating until
 *   everything in it is gone.
 * - admission: a new pod goes through the ServiceAccount plugin (service-account-admission.ts), a
 *   new claim through DefaultStorageClass (persistentvolume-controller.ts).
 * Not modelled: managedFields and apply conflicts (server-side apply merges the applied object into
 * the live one and creates it if absent, without field ownership), strategic merge patch, other
 * admission plugins (quotas, limit ranges), unknown-field
 * pruning (the real server drops unknown fields with a warning; here they are kept).
 */
import { randomBytes, randomUUID } from "node:crypto";
import YAML from "yaml";
import { KINDS, apiVersionOf, checkCommon, kindFor, stable, validateScale, validateSchema } from "./kinds";
import type { KindInfo, KubeObject } from "./kinds";
import { jsonPatch, mergePatch } from "./patch";
import { admitServiceAccount } from "./service-account-admission";
import { admitDefaultStorageClass } from "./persistentvolume-controller";
import { selectorString } from "./selectors";
import {
  KubeStatusError,
  alreadyExists,
  badRequest,
  conflict,
  expired,
  forbidden,
  invalid,
  notFound,
  cause,
} from "./status";

export type EventType = "ADDED" | "MODIFIED" | "DELETED";
export interface StoreEvent {
  rv: number;
  type: EventType;
  kind: KindInfo;
  object: KubeObject;
  previous?: KubeObject;
}
export type PropagationPolicy = "Background" | "Foreground" | "Orphan";
export interface DeleteOptions {
  propagationPolicy?: PropagationPolicy;
  gracePeriodSeconds?: number;
  dryRun?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
}
export interface WriteOptions {
  dryRun?: boolean;
  subresource?: "status";
}
export type PatchType = "merge" | "json" | "apply";
export interface PatchOptions extends WriteOptions {
  fieldManager?: string;
  force?: boolean;
}

export interface ApiStateOptions {
  /** How many changes watches can replay. @default 1000 */
  historySize?: number;
  /**
   * Where Service cluster IPs come from. Loopback by default: nothing outside this machine is
   * ever addressed here, not even by mistake. @default "127.96"
   */
  serviceIpPrefix?: string;
}

const NAMESPACES = kindFor("", "v1", "namespaces")!;
const PODS = kindFor("", "v1", "pods")!;
const PVCS = kindFor("", "v1", "persistentvolumeclaims")!;
const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
const now = (ms = Date.now()): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z");
const keyOf = (ns: string | undefined, name: string): string => (ns ? `${ns}/${name}` : name);
const clone = <T>(o: T): T => structuredClone(o);

export class ApiState {
  private rv = 0;
  /** Changes up to this version have left the history: older watches are Expired. */
  private compacted = 0;
  private readonly data = new Map<KindInfo, Map<string, KubeObject>>(KINDS.map((k) => [k, new Map()]));
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  private readonly historySize: number;
  private readonly ipPrefix: string;
  private nextIp = 1;

  constructor(o: ApiStateOptions = {}) {
    this.historySize = o.historySize ?? 1000;
    this.ipPrefix = o.serviceIpPrefix ?? "127.96";
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The changes after `rv` (a number), or Expired if some of them have left the history. */
  eventsAfter(rv: number): StoreEvent[] {
    if (rv < this.compacted) throw expired(`too old resource version: ${rv} (${this.compacted + 1})`);
    return this.history.filter((e) => e.rv > rv);
  }

  // ---- reads ----

  find(k: KindInfo, ns: string | undefined, name: string): KubeObject | undefined {
    const o = this.data.get(k)!.get(keyOf(k.namespaced ? ns : undefined, name));
    return o && clone(o);
  }

  get(k: KindInfo, ns: string | undefined, name: string): KubeObject {
    return (
      this.find(k, ns, name) ??
      (() => {
        throw notFound(k, name);
      })()
    );
  }

  /** Every object of the kind (in `ns`, or everywhere), ordered by namespace and name. */
  list(k: KindInfo, ns?: string, filter: (o: KubeObject) => boolean = () => true): KubeObject[] {
    const out: KubeObject[] = [];
    for (const o of this.data.get(k)!.values())
      if ((!ns || o.metadata.namespace === ns) && filter(o)) out.push(clone(o));
    // By key, byte order, as etcd lists.
    const key = (o: KubeObject): string => keyOf(o.metadata.namespace, o.metadata.name!);
    return out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  // ---- writes ----

  create(k: KindInfo, ns: string | undefined, body: unknown, o: WriteOptions = {}): KubeObject {
    const obj = this.body(k, body);
    this.checkNamespace(k, ns, obj);
    const m = obj.metadata;
    if (!m.name && m.generateName)
      m.name =
        m.generateName + Array.from(randomBytes(5), (b) => GENERATE_ALPHABET[b % GENERATE_ALPHABET.length]).join("");
    if (m.resourceVersion)
      throw invalid(k, m.name ?? "", [
        cause("metadata.resourceVersion", `Invalid value: ${JSON.stringify(m.resourceVersion)}: must be empty`),
      ]);
    if (k.namespaced) {
      const space = this.find(NAMESPACES, undefined, ns!);
      if (!space) throw notFound(NAMESPACES, ns!);
      if (space.metadata.deletionTimestamp)
        throw forbidden(
          k,
          m.name ?? "",
          `unable to create new content in namespace ${ns} because it is being terminated`,
        );
    }
    // Admission, after the namespace's and before storage's checks (as kube-apiserver orders them).
    if (k === PODS) admitServiceAccount(this, ns!, obj);
    if (k === PVCS) admitDefaultStorageClass(this, obj);
    if (m.name && this.find(k, ns, m.name)) throw alreadyExists(k, m.name);
    for (const f of [
      "uid",
      "creationTimestamp",
      "deletionTimestamp",
      "deletionGracePeriodSeconds",
      "generation",
      "managedFields",
      "selfLink",
    ])
      delete m[f];
    if (k.status) delete obj.status;
    return this.commit(k, undefined, obj, o.dryRun);
  }

  /** PUT: the whole object (or, for `/status`, its status) replaced, resourceVersion checked if given. */
  replace(k: KindInfo, ns: string | undefined, name: string, body: unknown, o: WriteOptions = {}): KubeObject {
    const old = this.get(k, ns, name);
    const obj = this.body(k, body);
    this.checkNamespace(k, ns, obj);
    if (obj.metadata.name !== undefined && obj.metadata.name !== name)
      throw badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`);
    obj.metadata.name = name;
    const want = obj.metadata.resourceVersion;
    if (want !== undefined && want !== "" && want !== old.metadata.resourceVersion) throw conflict(k, name);
    if (obj.metadata.uid && obj.metadata.uid !== old.metadata.uid)
      throw conflict(
        k,
        name,
        `Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    let next: KubeObject;
    if (o.subresource === "status") next = { ...old, status: obj.status };
    else {
      next = obj;
      if (k.status) next.status = old.status;
    }
    return this.commit(k, old, next, o.dryRun);
  }

  patch(
    k: KindInfo,
    ns: string | undefined,
    name: string,
    type: PatchType,
    raw: string,
    o: PatchOptions = {},
  ): KubeObject {
    let patch: unknown;
    try {
      patch = type === "apply" ? YAML.parse(raw) : JSON.parse(raw);
    } catch (err) {
      throw badRequest(`error decoding patch: ${(err as Error).message}`);
    }
    if (type === "apply") {
      if (!o.fieldManager)
        throw new KubeStatusError(
          422,
          "Invalid",
          `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
        );
      if (typeof patch !== "object" || patch === null || Array.isArray(patch))
        throw badRequest("an apply patch must be an object");
      const applied = patch as KubeObject;
      if (!applied.apiVersion || !applied.kind)
        throw badRequest(`invalid object: apiVersion and kind are required for apply`);
      const existing = this.find(k, ns, name);
      if (!existing) {
        if (o.subresource) throw notFound(k, name);
        return this.create(k, ns, { ...applied, metadata: { ...applied.metadata, name } }, o);
      }
      patch = applied;
    }
    const old = this.get(k, ns, name);
    const next = (type === "json" ? jsonPatch(old, patch) : mergePatch(old, patch)) as KubeObject;
    if (typeof next !== "object" || next === null || Array.isArray(next))
      throw badRequest("the patch did not leave an object");
    next.metadata ??= {};
    if (type === "apply") delete next.metadata.resourceVersion;
    return this.replace(k, ns, name, next, o);
  }

  delete(k: KindInfo, ns: string | undefined, name: string, o: DeleteOptions = {}): KubeObject {
    const old = this.get(k, ns, name);
    const pre = o.preconditions ?? {};
    if (pre.uid && pre.uid !== old.metadata.uid)
      throw conflict(
        k,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    if (pre.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion)
      throw conflict(
        k,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      );
    const policy = o.propagationPolicy ?? "Background";
    if (!["Background", "Foreground", "Orphan"].includes(policy))
      throw badRequest(
        `propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"`,
      );
    if (o.dryRun) return old;
    if (policy === "Orphan")
      for (const d of this.dependents(old.metadata.uid!)) this.stripOwner(d.kind, d.object, old.metadata.uid!);
    if (k === NAMESPACES) return this.terminateNamespace(old);
    const grace =
      k === PODS && old.spec?.nodeName ? (o.gracePeriodSeconds ?? old.spec?.terminationGracePeriodSeconds ?? 30) : 0;
    const finalizers = [...(old.metadata.finalizers ?? [])];
    if (
      policy === "Foreground" &&
      this.dependents(old.metadata.uid!).length &&
      !finalizers.includes("foregroundDeletion")
    )
      finalizers.push("foregroundDeletion");
    if (old.metadata.deletionTimestamp) {
      if (grace === 0 && k === PODS && !finalizers.length) return this.remove(k, old);
      return old; // already being deleted
    }
    if (grace === 0 && finalizers.length === 0) return this.remove(k, old);
    const next = clone(old);
    next.metadata.deletionTimestamp = now(Date.now() + grace * 1000);
    next.metadata.deletionGracePeriodSeconds = grace;
    if (finalizers.length) next.metadata.finalizers = finalizers;
    const marked = this.write(k, "MODIFIED", next);
    if (finalizers.includes("foregroundDeletion"))
      for (const d of this.dependents(old.metadata.uid!)) this.deleteQuietly(d.kind, d.object, "Foreground");
    return marked;
  }

  /** The kubelet's word that a deleted pod's containers are gone: the pod leaves the API (unless finalizers hold it). */
  podTerminated(ns: string, name: string, uid: string): void {
    const pod = this.find(PODS, ns, name);
    if (!pod || pod.metadata.uid !== uid || !pod.metadata.deletionTimestamp) return;
    if (!(pod.metadata.finalizers ?? []).length) this.remove(PODS, pod);
    else if (pod.metadata.deletionGracePeriodSeconds !== 0)
      this.write(PODS, "MODIFIED", { ...pod, metadata: { ...pod.metadata, deletionGracePeriodSeconds: 0 } });
  }

  /** A status write by the kubelet or a controller, skipped if the object is gone or was recreated (another uid). */
  updateStatus(
    k: KindInfo,
    ns: string | undefined,
    name: string,
    uid: string,
    mutate: (status: any, o: KubeObject) => void,
  ): KubeObject | undefined {
    return this.mutate(k, ns, name, uid, (o) => {
      o.status ??= {};
      mutate(o.status, o);
    });
  }

  /** An in-place change by a controller (the scheduler's binding, a status), validated as any update. */
  mutate(
    k: KindInfo,
    ns: string | undefined,
    name: string,
    uid: string,
    change: (o: KubeObject) => void,
  ): KubeObject | undefined {
    const old = this.find(k, ns, name);
    if (!old || old.metadata.uid !== uid) return undefined;
    const next = clone(old);
    change(next);
    return this.commit(k, old, next);
  }

  // ---- the /scale subresource (autoscaling/v1 Scale) ----

  getScale(k: KindInfo, ns: string | undefined, name: string): KubeObject {
    const o = this.get(k, ns, name);
    return {
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: {
        name,
        namespace: o.metadata.namespace,
        uid: o.metadata.uid,
        resourceVersion: o.metadata.resourceVersion,
        creationTimestamp: o.metadata.creationTimestamp,
      },
      spec: { replicas: o.spec?.replicas ?? 0 },
      status: { replicas: o.status?.replicas ?? 0, selector: selectorString(o.spec?.selector) },
    };
  }

  replaceScale(k: KindInfo, ns: string | undefined, name: string, body: unknown, o: WriteOptions = {}): KubeObject {
    if (typeof body !== "object" || body === null) throw badRequest("the body must be a Scale object");
    const scale = body as KubeObject;
    scale.metadata ??= {};
    validateScale(k, scale);
    const current = this.get(k, ns, name);
    const want = scale.metadata.resourceVersion;
    if (want && want !== current.metadata.resourceVersion) throw conflict(k, name);
    if (typeof scale.spec?.replicas !== "number")
      throw invalid({ ...k, kind: "Scale", group: "autoscaling" }, name, [
        cause("spec.replicas", "Required value", "FieldValueRequired"),
      ]);
    this.commit(k, current, { ...current, spec: { ...current.spec, replicas: scale.spec.replicas } }, o.dryRun);
    return o.dryRun
      ? { ...this.getScale(k, ns, name), spec: { replicas: scale.spec.replicas } }
      : this.getScale(k, ns, name);
  }

  patchScale(
    k: KindInfo,
    ns: string | undefined,
    name: string,
    type: PatchType,
    raw: string,
    o: WriteOptions = {},
  ): KubeObject {
    if (type === "apply")
      throw new KubeStatusError(415, "UnsupportedMediaType", "the fake does not apply-patch the scale subresource");
    let patch: unknown;
    try {
      patch = JSON.parse(raw);
    } catch (err) {
      throw badRequest(`error decoding patch: ${(err as Error).message}`);
    }
    const current = this.getScale(k, ns, name);
    const next = (type === "json" ? jsonPatch(current, patch) : mergePatch(current, patch)) as KubeObject;
    return this.replaceScale(k, ns, name, next, o);
  }

  // ---- internals ----

  /** The request body as an object of kind `k`, apiVersion and kind checked (filled in when absent, as for a typed client). */
  private body(k: KindInfo, body: unknown): KubeObject {
    if (typeof body !== "object" || body === null || Array.isArray(body))
      throw badRequest(`the body must be a JSON object (a ${k.kind})`);
    const o = clone(body) as KubeObject;
    if (o.kind !== undefined && o.kind !== k.kind)
      throw badRequest(`the kind in the body (${String(o.kind)}) does not match the resource (${k.kind})`);
    if (o.apiVersion !== undefined && o.apiVersion !== apiVersionOf(k))
      throw badRequest(
        `the API version in the data (${String(o.apiVersion)}) does not match the expected API version (${apiVersionOf(k)})`,
      );
    o.kind = k.kind;
    o.apiVersion = apiVersionOf(k);
    if (typeof o.metadata !== "object" || o.metadata === null || Array.isArray(o.metadata)) o.metadata = {};
    return o;
  }

  private checkNamespace(k: KindInfo, ns: string | undefined, o: KubeObject): void {
    if (!k.namespaced) {
      delete o.metadata.namespace;
      return;
    }
    if (o.metadata.namespace !== undefined && o.metadata.namespace !== "" && o.metadata.namespace !== ns)
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    o.metadata.namespace = ns;
  }

  /** Defaults, validation, bookkeeping and the write itself (nothing for a no-op update). */
  private commit(k: KindInfo, old: KubeObject | undefined, next: KubeObject, dryRun = false): KubeObject {
    next = clone(next);
    k.prepare?.(next, { creating: !old, old, allocateClusterIp: () => this.allocateIp() });
    validateSchema(k, next);
    const causes = [
      ...checkCommon(k, next),
      ...(k.check?.(next) ?? []),
      ...(old && k.checkUpdate ? k.checkUpdate(old, next) : []),
    ];
    const m = next.metadata;
    if (old) {
      const oldFin = old.metadata.finalizers ?? [];
      if (old.metadata.deletionTimestamp && (m.finalizers ?? []).some((f) => !oldFin.includes(f)))
        causes.push(
          cause(
            "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted",
            "FieldValueForbidden",
          ),
        );
    }
    if (causes.length) throw invalid(k, m.name ?? "", causes);
    if (!k.generation) delete m.generation;
    if (old) {
      m.uid = old.metadata.uid;
      m.creationTimestamp = old.metadata.creationTimestamp;
      if (old.metadata.deletionTimestamp) {
        m.deletionTimestamp = old.metadata.deletionTimestamp;
        m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
      } else {
        delete m.deletionTimestamp;
        delete m.deletionGracePeriodSeconds;
      }
      if (k.generation)
        m.generation = (old.metadata.generation ?? 1) + (stable(old.spec) === stable(next.spec) ? 0 : 1);
      m.resourceVersion = old.metadata.resourceVersion;
      if (stable(canonical(old)) === stable(canonical(next))) return old;
    } else {
      m.uid = randomUUID();
      m.creationTimestamp = now();
      if (k.generation) m.generation = 1;
    }
    if (dryRun) return next;
    if (old && m.deletionTimestamp && !(m.finalizers ?? []).length && !(k === PODS && m.deletionGracePeriodSeconds))
      return this.remove(k, next);
    return this.write(k, old ? "MODIFIED" : "ADDED", next);
  }

  private write(k: KindInfo, type: EventType, o: KubeObject): KubeObject {
    o.metadata.resourceVersion = String(++this.rv);
    const key = keyOf(o.metadata.namespace, o.metadata.name!);
    const previous = this.data.get(k)!.get(key);
    this.data.get(k)!.set(key, clone(o));
    this.emit({ rv: this.rv, type, kind: k, object: clone(o), ...(previous ? { previous } : {}) });
    return o;
  }

  private remove(k: KindInfo, o: KubeObject): KubeObject {
    this.data.get(k)!.delete(keyOf(o.metadata.namespace, o.metadata.name!));
    const gone = clone(o);
    gone.metadata.resourceVersion = String(++this.rv);
    this.emit({ rv: this.rv, type: "DELETED", kind: k, object: clone(gone) });
    // The garbage collector: dependents of a removed owner go too (Background), owners waiting in
    // Foreground deletion go once their last dependent has, and a terminating namespace once empty.
    queueMicrotask(() => this.collect(gone));
    return gone;
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    while (this.history.length > this.historySize) this.compacted = this.history.shift()!.rv;
    for (const fn of [...this.listeners]) fn(e);
  }

  private dependents(uid: string): { kind: KindInfo; object: KubeObject }[] {
    const out: { kind: KindInfo; object: KubeObject }[] = [];
    for (const [kind, objs] of this.data)
      for (const o of objs.values())
        if ((o.metadata.ownerReferences ?? []).some((r) => r.uid === uid)) out.push({ kind, object: o });
    return out;
  }

  private stripOwner(k: KindInfo, o: KubeObject, uid: string): void {
    const refs = (o.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
    const next = clone(o);
    if (refs.length) next.metadata.ownerReferences = refs;
    else delete next.metadata.ownerReferences;
    this.commit(k, o, next);
  }

  private deleteQuietly(k: KindInfo, o: KubeObject, policy: PropagationPolicy): void {
    try {
      this.delete(k, o.metadata.namespace, o.metadata.name!, {
        propagationPolicy: policy,
        preconditions: { uid: o.metadata.uid },
      });
    } catch (err) {
      if (!(err instanceof KubeStatusError && (err.code === 404 || err.code === 409))) throw err;
    }
  }

  private collect(gone: KubeObject): void {
    for (const d of this.dependents(gone.metadata.uid!))
      if (!d.object.metadata.deletionTimestamp) this.deleteQuietly(d.kind, d.object, "Background");
    for (const ref of gone.metadata.ownerReferences ?? []) {
      for (const [kind, objs] of this.data) {
        for (const owner of objs.values()) {
          if (
            owner.metadata.uid !== ref.uid ||
            !owner.metadata.finalizers?.includes("foregroundDeletion") ||
            this.dependents(ref.uid).length
          )
            continue;
          const next = clone(owner);
          next.metadata.finalizers = owner.metadata.finalizers.filter((f) => f !== "foregroundDeletion");
          this.commit(kind, owner, next);
        }
      }
    }
    const ns = gone.metadata.namespace;
    if (ns) {
      const space = this.find(NAMESPACES, undefined, ns);
      if (space?.metadata.deletionTimestamp && this.empty(ns)) this.remove(NAMESPACES, space);
    }
  }

  private empty(ns: string): boolean {
    for (const [kind, objs] of this.data)
      if (kind.namespaced) for (const o of objs.values()) if (o.metadata.namespace === ns) return false;
    return true;
  }

  private terminateNamespace(old: KubeObject): KubeObject {
    if (old.metadata.deletionTimestamp) return old;
    const ns = old.metadata.name!;
    const next = clone(old);
    next.metadata.deletionTimestamp = now();
    next.metadata.deletionGracePeriodSeconds = 0;
    next.status = { ...next.status, phase: "Terminating" };
    const marked = this.write(NAMESPACES, "MODIFIED", next);
    for (const [kind, objs] of this.data) {
      if (!kind.namespaced) continue;
      for (const o of [...objs.values()])
        if (o.metadata.namespace === ns && !o.metadata.deletionTimestamp) this.deleteQuietly(kind, o, "Background");
    }
    if (this.empty(ns)) return this.remove(NAMESPACES, marked);
    return marked;
  }

  private allocateIp(): string {
    const n = this.nextIp++;
    return `${this.ipPrefix}.${Math.floor(n / 254) % 256}.${(n % 254) + 1}`;
  }
}

/** An object without its resourceVersion, for telling a no-op update. */
function canonical(o: KubeObject): unknown {
  return { ...o, metadata: { ...o.metadata, resourceVersion: undefined } };
}
