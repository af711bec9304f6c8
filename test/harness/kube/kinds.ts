/**
 * The kinds the fake serves, what the real API server does to each on write, and how each is
 * validated. Every written object goes through the official OpenAPI schema of Kubernetes 1.33
 * (`kubernetes-models` 4.5.1): a value of the wrong type (or a bad base64 `data` value) fails
 * decoding, which the real server answers 400 BadRequest; a missing required field is 422 Invalid.
 * On top of the schema, the checks of `pkg/apis/*\/validation` the substrate can run into: object
 * names (RFC 1123 subdomain, RFC 1123 label for namespaces, RFC 1035 label for services), label
 * syntax, a StatefulSet's selector matching its template's labels, and the fields an update may not
 * change (a StatefulSet's spec beyond replicas/template/updateStrategy/…, a pod's spec beyond
 * images, a Service's clusterIP, an immutable Secret or ConfigMap).
 * Defaults are those of the API reference for each field (StatefulSet podManagementPolicy
 * OrderedReady, replicas 1, RollingUpdate partition 0; Service type ClusterIP, protocol TCP,
 * targetPort = port; pod restartPolicy Always, terminationGracePeriodSeconds 30; Secret type Opaque,
 * `stringData` folded into `data`).
 */
import { StatefulSet } from "kubernetes-models/apps/v1";
import { Scale } from "kubernetes-models/autoscaling/v1";
import { Lease } from "kubernetes-models/coordination.k8s.io/v1";
import { EndpointSlice } from "kubernetes-models/discovery.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { StorageClass } from "kubernetes-models/storage.k8s.io/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import {
  ConfigMap,
  Namespace,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from "kubernetes-models/v1";
import { matchesSelector } from "./selectors";
import { KubeStatusError, cause, invalid } from "./status";
import type { StatusCause } from "./status";

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: {
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
      blockOwnerDeletion?: boolean;
    }[];
    [k: string]: unknown;
  };
  spec?: any;
  status?: any;
  [k: string]: unknown;
};

type Model = new (data: never) => { validate(): void };
type NameRule = "subdomain" | "label" | "dns1035" | "path";

export interface KindInfo {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  model: Model;
  /** Has a `/status` subresource: writes to the main resource keep the stored status. */
  status: boolean;
  /** Has a `/scale` subresource (spec.replicas). */
  scale: boolean;
  /** Keeps metadata.generation, bumped when the spec changes. */
  generation: boolean;
  nameRule: NameRule;
  /** Field selectors beyond metadata.name and metadata.namespace. */
  fields?: Record<string, (o: Record<string, unknown>) => string | undefined>;
  /** Defaults and normalisation applied on every write (create and update). */
  prepare?(o: KubeObject, ctx: PrepareContext): void;
  /** Semantic checks beyond the schema. */
  check?(o: KubeObject): StatusCause[];
  /** What an update may not change. */
  checkUpdate?(old: KubeObject, next: KubeObject): StatusCause[];
}
export interface PrepareContext {
  creating: boolean;
  old?: KubeObject;
  allocateClusterIp(): string;
}

export const apiVersionOf = (k: KindInfo): string => (k.group ? `${k.group}/${k.version}` : k.version);

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** The message of apimachinery's name validators, as the real server words them. */
export function nameProblem(name: string, rule: NameRule): string | undefined {
  if (rule === "subdomain") {
    if (name.length > 253) return "must be no more than 253 characters";
    if (!SUBDOMAIN.test(name))
      return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  } else if (rule === "label") {
    if (name.length > 63) return "must be no more than 63 characters";
    if (!LABEL.test(name))
      return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  } else if (rule === "path") {
    // RBAC objects: any path segment (ValidatePathSegmentName).
    if (name === "." || name === "..") return `may not be '${name}'`;
    if (/[/%]/.test(name)) return `may not contain '${name.includes("/") ? "/" : "%"}'`;
  } else {
    if (name.length > 63) return "must be no more than 63 characters";
    if (!DNS1035.test(name))
      return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
  }
  return undefined;
}

function labelCauses(labels: Record<string, string> | undefined, field: string): StatusCause[] {
  const out: StatusCause[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    const slash = k.lastIndexOf("/");
    const [prefix, name] = slash >= 0 ? [k.slice(0, slash), k.slice(slash + 1)] : ["", k];
    if ((slash >= 0 && (!SUBDOMAIN.test(prefix) || prefix.length > 253)) || name.length > 63 || !QUALIFIED.test(name))
      out.push(
        cause(
          field,
          `Invalid value: ${JSON.stringify(k)}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
        ),
      );
    if (typeof v === "string" && (v.length > 63 || !LABEL_VALUE.test(v)))
      out.push(
        cause(
          field,
          `Invalid value: ${JSON.stringify(v)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
        ),
      );
  }
  return out;
}

/** ajv's instancePath `/spec/containers/0/name` as the API server writes a field: `spec.containers[0].name`. */
function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split("/")
    .slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (extra) parts.push(extra);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), "");
}

type AjvError = { instancePath: string; keyword: string; params: Record<string, unknown>; message?: string };

/** Validates `o` against the kind's schema: decoding errors (wrong types) are 400, the rest 422. */
export function validateSchema(k: KindInfo, o: KubeObject, model: Model = k.model, what = k.kind): void {
  try {
    new model(structuredClone(o) as never).validate();
  } catch (err) {
    const errors = (err as { errors?: AjvError[] }).errors;
    if (!Array.isArray(errors)) throw err;
    const decode = errors.filter((e) => e.keyword === "type" || e.keyword === "format");
    if (decode.length) {
      const e = decode[0]!;
      const field = fieldPath(e.instancePath);
      throw new KubeStatusError(
        400,
        "BadRequest",
        `${what} in version "${k.version}" cannot be handled as a ${what}: ${e.keyword === "type" ? `json: cannot unmarshal into Go struct field ${field} of type ${String(e.params.type)}` : `${field}: illegal ${String(e.params.format)} data`}`,
      );
    }
    const causes = errors.map((e) =>
      e.keyword === "required"
        ? cause(fieldPath(e.instancePath, String(e.params.missingProperty)), "Required value", "FieldValueRequired")
        : cause(fieldPath(e.instancePath), `Invalid value: ${e.message ?? e.keyword}`),
    );
    throw invalid(k, o.metadata?.name ?? "", causes);
  }
}

/** Validates a Scale written to a `/scale` subresource. */
export function validateScale(k: KindInfo, o: KubeObject): void {
  validateSchema(k, o, Scale as unknown as Model, "Scale");
  const r = (o.spec as { replicas?: number } | undefined)?.replicas;
  if (typeof r === "number" && r < 0)
    throw invalid({ ...k, kind: "Scale", group: "autoscaling" }, o.metadata?.name ?? "", [
      cause("spec.replicas", `Invalid value: ${r}: must be greater than or equal to 0`),
    ]);
}

export function checkCommon(k: KindInfo, o: KubeObject): StatusCause[] {
  const out: StatusCause[] = [];
  const name = o.metadata?.name ?? "";
  if (!name) out.push(cause("metadata.name", "Required value: name or generateName is required", "FieldValueRequired"));
  else {
    const p = nameProblem(name, k.nameRule);
    if (p) out.push(cause("metadata.name", `Invalid value: ${JSON.stringify(name)}: ${p}`));
  }
  out.push(...labelCauses(o.metadata?.labels, "metadata.labels"));
  return out;
}

// ---- per-kind behaviour ----

/** JSON with object keys sorted and undefined dropped: equal for equal objects whatever their key order. */
export function stable(o: unknown): string {
  if (Array.isArray(o)) return `[${o.map((v) => (v === undefined ? "null" : stable(v))).join(",")}]`;
  if (o && typeof o === "object")
    return `{${Object.keys(o)
      .sort()
      .filter((k) => (o as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stable((o as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(o ?? null);
}
const strip = stable;
const imageTag = (image: string): string | undefined => {
  const at = image.split("@")[0]!;
  const slash = at.lastIndexOf("/");
  const colon = at.lastIndexOf(":");
  return colon > slash ? at.slice(colon + 1) : undefined;
};

/** Pod spec defaults (also applied to a StatefulSet's template), from the PodSpec API reference. */
function defaultPodSpec(spec: Record<string, any> | undefined): void {
  if (!spec) return;
  spec.restartPolicy ??= "Always";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.securityContext ??= {};
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    if (typeof c !== "object" || c === null) continue;
    if (typeof c.image === "string")
      c.imagePullPolicy ??= (imageTag(c.image) ?? "latest") === "latest" ? "Always" : "IfNotPresent";
    c.terminationMessagePath ??= "/dev/termination-log";
    c.terminationMessagePolicy ??= "File";
    for (const p of c.ports ?? []) if (p && typeof p === "object") p.protocol ??= "TCP";
  }
}

const statefulSetMutable = [
  "replicas",
  "ordinals",
  "template",
  "updateStrategy",
  "persistentVolumeClaimRetentionPolicy",
  "minReadySeconds",
  "revisionHistoryLimit",
];

export const KINDS: KindInfo[] = [
  {
    group: "",
    version: "v1",
    kind: "Namespace",
    plural: "namespaces",
    singular: "namespace",
    namespaced: false,
    model: Namespace as unknown as Model,
    status: true,
    scale: false,
    generation: false,
    nameRule: "label",
    fields: { "status.phase": (o) => (o.status as { phase?: string } | undefined)?.phase },
    prepare(o) {
      o.metadata.labels = { ...o.metadata.labels, "kubernetes.io/metadata.name": o.metadata.name! };
      o.spec = { finalizers: ["kubernetes"], ...o.spec };
      o.status ??= { phase: "Active" };
    },
  },
  {
    group: "",
    version: "v1",
    kind: "Service",
    plural: "services",
    singular: "service",
    namespaced: true,
    model: Service as unknown as Model,
    status: true,
    scale: false,
    generation: false,
    nameRule: "dns1035",
    prepare(o, ctx) {
      const s = (o.spec ??= {});
      s.type ??= "ClusterIP";
      s.sessionAffinity ??= "None";
      if (s.type !== "ExternalName") {
        if (ctx.old && s.clusterIP === undefined) s.clusterIP = ctx.old.spec?.clusterIP;
        if (s.clusterIP === undefined || s.clusterIP === "") s.clusterIP = ctx.allocateClusterIp();
        s.clusterIPs ??= [s.clusterIP];
        s.ipFamilies ??= ["IPv4"];
        s.ipFamilyPolicy ??= "SingleStack";
        s.internalTrafficPolicy ??= "Cluster";
      }
      for (const p of s.ports ?? [])
        if (p && typeof p === "object") {
          p.protocol ??= "TCP";
          p.targetPort ??= p.port;
        }
      o.status ??= { loadBalancer: {} };
    },
    check(o) {
      const s = o.spec ?? {};
      const headless = s.clusterIP === "None";
      if (!headless && s.type !== "ExternalName" && !s.ports?.length)
        return [cause("spec.ports", "Required value", "FieldValueRequired")];
      return [];
    },
    checkUpdate(old, next) {
      const a = old.spec?.clusterIP,
        b = next.spec?.clusterIP;
      return a && a !== b
        ? [cause("spec.clusterIPs[0]", `Invalid value: ${JSON.stringify(b)}: may not change once set`)]
        : [];
    },
  },
  {
    group: "",
    version: "v1",
    kind: "Secret",
    plural: "secrets",
    singular: "secret",
    namespaced: true,
    model: Secret as unknown as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    fields: { type: (o) => o.type as string | undefined },
    prepare(o) {
      o.type ??= "Opaque";
      const sd = o.stringData as Record<string, string> | undefined;
      if (sd && typeof sd === "object") {
        const data = { ...(o.data as Record<string, string> | undefined) };
        for (const [k, v] of Object.entries(sd)) data[k] = Buffer.from(String(v), "utf8").toString("base64");
        o.data = data;
      }
      delete o.stringData;
    },
    checkUpdate: immutableData,
  },
  {
    group: "",
    version: "v1",
    kind: "ConfigMap",
    plural: "configmaps",
    singular: "configmap",
    namespaced: true,
    model: ConfigMap as unknown as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    checkUpdate: immutableData,
  },
  {
    group: "",
    version: "v1",
    kind: "ServiceAccount",
    plural: "serviceaccounts",
    singular: "serviceaccount",
    namespaced: true,
    model: ServiceAccount as unknown as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "subdomain",
  },
  {
    group: "",
    version: "v1",
    kind: "Pod",
    plural: "pods",
    singular: "pod",
    namespaced: true,
    model: Pod as unknown as Model,
    status: true,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    fields: {
      "status.phase": (o) => (o.status as { phase?: string } | undefined)?.phase,
      "spec.nodeName": (o) => (o.spec as { nodeName?: string } | undefined)?.nodeName,
      "status.podIP": (o) => (o.status as { podIP?: string } | undefined)?.podIP,
    },
    prepare(o) {
      defaultPodSpec(o.spec);
      o.status ??= { phase: "Pending", qosClass: qosClass(o.spec) };
    },
    check(o) {
      const names = new Set<string>();
      const out: StatusCause[] = [];
      for (const [i, c] of ((o.spec?.containers ?? []) as { name?: string }[]).entries()) {
        if (c?.name && names.has(c.name))
          out.push(
            cause(`spec.containers[${i}].name`, `Duplicate value: ${JSON.stringify(c.name)}`, "FieldValueDuplicate"),
          );
        if (c?.name) names.add(c.name);
      }
      if (Array.isArray(o.spec?.containers) && o.spec.containers.length === 0)
        out.push(cause("spec.containers", "Required value", "FieldValueRequired"));
      return out;
    },
    checkUpdate(old, next) {
      // Only images (and activeDeadlineSeconds, tolerations, scheduling gates) may change in place.
      const masked = (s: Record<string, any>): string =>
        strip({
          ...s,
          activeDeadlineSeconds: undefined,
          tolerations: undefined,
          schedulingGates: undefined,
          nodeName: undefined,
          containers: (s?.containers ?? []).map((c: object) => ({ ...c, image: undefined })),
          initContainers: (s?.initContainers ?? []).map((c: object) => ({ ...c, image: undefined })),
        });
      if (old.spec?.nodeName && next.spec?.nodeName !== undefined && next.spec.nodeName !== old.spec.nodeName)
        return [cause("spec.nodeName", "Forbidden: pod updates may not change nodeName", "FieldValueForbidden")];
      return masked(old.spec) === masked(next.spec)
        ? []
        : [
            cause(
              "spec",
              "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
              "FieldValueForbidden",
            ),
          ];
    },
  },
  {
    group: "",
    version: "v1",
    kind: "PersistentVolumeClaim",
    plural: "persistentvolumeclaims",
    singular: "persistentvolumeclaim",
    namespaced: true,
    model: PersistentVolumeClaim as unknown as Model,
    status: true,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    prepare(o) {
      if (o.spec) o.spec.volumeMode ??= "Filesystem";
      o.status ??= { phase: "Pending" };
    },
    checkUpdate(old, next) {
      const masked = (s: Record<string, any>): string =>
        strip({
          ...s,
          resources: { ...s?.resources, requests: undefined },
          volumeName: undefined,
          volumeAttributesClassName: undefined,
        });
      return masked(old.spec) === masked(next.spec)
        ? []
        : [
            cause(
              "spec",
              "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
              "FieldValueForbidden",
            ),
          ];
    },
  },
  {
    group: "",
    version: "v1",
    kind: "PersistentVolume",
    plural: "persistentvolumes",
    singular: "persistentvolume",
    namespaced: false,
    model: PersistentVolume as unknown as Model,
    status: true,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    prepare(o) {
      if (o.spec) {
        o.spec.volumeMode ??= "Filesystem";
        // A volume made by hand is kept when its claim goes; a provisioned one has its class's policy.
        o.spec.persistentVolumeReclaimPolicy ??= "Retain";
      }
      o.status ??= { phase: "Pending" };
    },
    checkUpdate(old, next) {
      const masked = (s: Record<string, any>): string =>
        strip({ ...s, claimRef: undefined, persistentVolumeReclaimPolicy: undefined, capacity: undefined });
      return masked(old.spec) === masked(next.spec)
        ? []
        : [cause("spec.persistentvolumesource", "Forbidden: spec.persistentvolumesource is immutable after creation")];
    },
  },
  {
    group: "storage.k8s.io",
    version: "v1",
    kind: "StorageClass",
    plural: "storageclasses",
    singular: "storageclass",
    namespaced: false,
    model: StorageClass as unknown as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    prepare(o) {
      o.reclaimPolicy ??= "Delete";
      o.volumeBindingMode ??= "Immediate";
    },
    checkUpdate(old, next) {
      return (["provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"] as const).flatMap((f) =>
        strip(old[f]) === strip(next[f])
          ? []
          : [cause(f, `Forbidden: updates to ${f} are forbidden.`, "FieldValueForbidden")],
      );
    },
  },
  {
    group: "apps",
    version: "v1",
    kind: "StatefulSet",
    plural: "statefulsets",
    singular: "statefulset",
    namespaced: true,
    model: StatefulSet as unknown as Model,
    status: true,
    scale: true,
    generation: true,
    nameRule: "subdomain",
    prepare(o) {
      const s = o.spec;
      if (!s || typeof s !== "object") return;
      s.replicas ??= 1;
      s.podManagementPolicy ??= "OrderedReady";
      s.updateStrategy ??= { type: "RollingUpdate", rollingUpdate: { partition: 0 } };
      if (s.updateStrategy?.type === "RollingUpdate") s.updateStrategy.rollingUpdate ??= { partition: 0 };
      s.revisionHistoryLimit ??= 10;
      s.persistentVolumeClaimRetentionPolicy ??= { whenDeleted: "Retain", whenScaled: "Retain" };
      defaultPodSpec(s.template?.spec);
      for (const t of s.volumeClaimTemplates ?? [])
        if (t?.spec) {
          t.spec.volumeMode ??= "Filesystem";
          t.apiVersion ??= "v1";
          t.kind ??= "PersistentVolumeClaim";
        }
      o.status ??= { replicas: 0, availableReplicas: 0 };
    },
    check(o) {
      const s = o.spec ?? {};
      const out: StatusCause[] = [];
      const sel = s.selector;
      const empty = !sel || (!Object.keys(sel.matchLabels ?? {}).length && !(sel.matchExpressions ?? []).length);
      if (empty) out.push(cause("spec.selector", "Invalid value: empty selector is invalid for statefulset"));
      else if (!matchesSelector(sel, s.template?.metadata?.labels))
        out.push(
          cause(
            "spec.template.metadata.labels",
            `Invalid value: ${JSON.stringify(s.template?.metadata?.labels ?? {})}: \`selector\` does not match template \`labels\``,
          ),
        );
      if (typeof s.replicas === "number" && s.replicas < 0)
        out.push(cause("spec.replicas", `Invalid value: ${s.replicas}: must be greater than or equal to 0`));
      if (!["OrderedReady", "Parallel"].includes(s.podManagementPolicy))
        out.push(
          cause(
            "spec.podManagementPolicy",
            `Unsupported value: ${JSON.stringify(s.podManagementPolicy)}: supported values: "OrderedReady", "Parallel"`,
            "FieldValueNotSupported",
          ),
        );
      const rp = s.template?.spec?.restartPolicy;
      if (rp !== undefined && rp !== "Always")
        out.push(
          cause(
            "spec.template.spec.restartPolicy",
            `Unsupported value: ${JSON.stringify(rp)}: supported values: "Always"`,
            "FieldValueNotSupported",
          ),
        );
      return out;
    },
    checkUpdate(old, next) {
      const rest = (s: Record<string, unknown> | undefined): string =>
        strip(
          Object.fromEntries(
            Object.entries(s ?? {})
              .filter(([k]) => !statefulSetMutable.includes(k))
              .sort(([a], [b]) => a.localeCompare(b)),
          ),
        );
      return rest(old.spec) === rest(next.spec)
        ? []
        : [
            cause(
              "spec",
              "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
              "FieldValueForbidden",
            ),
          ];
    },
  },
  {
    group: "discovery.k8s.io",
    version: "v1",
    kind: "EndpointSlice",
    plural: "endpointslices",
    singular: "endpointslice",
    namespaced: true,
    model: EndpointSlice as unknown as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "subdomain",
    check(o) {
      const t = o.addressType;
      return ["IPv4", "IPv6", "FQDN"].includes(t as string)
        ? []
        : [
            cause(
              "addressType",
              `Unsupported value: ${JSON.stringify(t)}: supported values: "FQDN", "IPv4", "IPv6"`,
              "FieldValueNotSupported",
            ),
          ];
    },
    checkUpdate(old, next) {
      return old.addressType === next.addressType ? [] : [cause("addressType", "Invalid value: field is immutable")];
    },
  },
  {
    group: "coordination.k8s.io",
    version: "v1",
    kind: "Lease",
    plural: "leases",
    singular: "lease",
    namespaced: true,
    model: Lease as unknown as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "subdomain",
  },
  rbac("Role", "roles", true),
  rbac("RoleBinding", "rolebindings", true),
  rbac("ClusterRole", "clusterroles", false),
  rbac("ClusterRoleBinding", "clusterrolebindings", false),
  {
    group: "policy",
    version: "v1",
    kind: "PodDisruptionBudget",
    plural: "poddisruptionbudgets",
    singular: "poddisruptionbudget",
    namespaced: true,
    model: PodDisruptionBudget as unknown as Model,
    status: true,
    scale: false,
    generation: true,
    nameRule: "subdomain",
    prepare(o) {
      o.status ??= { currentHealthy: 0, desiredHealthy: 0, disruptionsAllowed: 0, expectedPods: 0 };
    }, // kept by disruption.ts
    check(o) {
      return o.spec?.minAvailable !== undefined && o.spec?.maxUnavailable !== undefined
        ? [cause("spec", "Invalid value: minAvailable and maxUnavailable cannot be both set")]
        : [];
    },
  },
];

/** RBAC kinds: names are path segments; a binding's roleRef never changes (delete and recreate it). */
function rbac(kind: string, plural: string, namespaced: boolean): KindInfo {
  const models: Record<string, unknown> = { Role, RoleBinding, ClusterRole, ClusterRoleBinding };
  return {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    kind,
    plural,
    singular: plural.replace(/s$/, ""),
    namespaced,
    model: models[kind] as Model,
    status: false,
    scale: false,
    generation: false,
    nameRule: "path",
    ...(kind.endsWith("Binding")
      ? {
          checkUpdate: (old: KubeObject, next: KubeObject) =>
            stable(old.roleRef) === stable(next.roleRef)
              ? []
              : [cause("roleRef", `Invalid value: ${stable(next.roleRef)}: cannot change roleRef`)],
        }
      : {}),
  };
}

/** The QoS class (Pod QoS concepts page): BestEffort without requests or limits, Guaranteed when cpu and memory limits equal requests in every container. */
function qosClass(
  spec:
    | { containers?: { resources?: { requests?: Record<string, string>; limits?: Record<string, string> } }[] }
    | undefined,
): string {
  const containers = spec?.containers ?? [];
  const any = containers.some(
    (c) => Object.keys(c?.resources?.requests ?? {}).length || Object.keys(c?.resources?.limits ?? {}).length,
  );
  if (!any) return "BestEffort";
  const guaranteed = containers.every((c) =>
    ["cpu", "memory"].every((r) => {
      const limit = c?.resources?.limits?.[r],
        request = c?.resources?.requests?.[r] ?? limit;
      return limit !== undefined && request === limit;
    }),
  );
  return guaranteed ? "Guaranteed" : "Burstable";
}

function immutableData(old: KubeObject, next: KubeObject): StatusCause[] {
  if (old.immutable !== true) return [];
  if (next.immutable !== true)
    return [cause("immutable", "Forbidden: field is immutable when `immutable` is set", "FieldValueForbidden")];
  if (strip(old.data) !== strip(next.data))
    return [cause("data", "Forbidden: field is immutable when `immutable` is set", "FieldValueForbidden")];
  if (strip(old.binaryData) !== strip(next.binaryData))
    return [cause("binaryData", "Forbidden: field is immutable when `immutable` is set", "FieldValueForbidden")];
  return [];
}

/** The kind at `/api/v1/…` (group "") or `/apis/<group>/<version>/…`, by plural resource name. */
export function kindFor(group: string, version: string, plural: string): KindInfo | undefined {
  return KINDS.find((k) => k.group === group && k.version === version && k.plural === plural);
}
