/**
 * The API server's error answers, as `metav1.Status` objects (API concepts, "Responses"; the
 * reasons and codes of `k8s.io/apimachinery/pkg/api/errors`): NotFound 404, AlreadyExists and
 * Conflict 409, Expired/Gone 410, Invalid 422, BadRequest 400, Unauthorized 401, MethodNotAllowed
 * 405, UnsupportedMediaType 415. `details.kind` is the resource (`pods`) except for Invalid, where
 * it is the Kind (`StatefulSet`), as the real server writes them.
 */
import type { KindInfo } from "./kinds";

export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export class KubeStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = "KubeStatusError";
  }
  toStatus(): Record<string, unknown> {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** `statefulsets.apps`, `pods`: how errors name a resource. */
export const qualifiedResource = (k: KindInfo): string => (k.group ? `${k.plural}.${k.group}` : k.plural);
const resourceDetails = (k: KindInfo, name: string): StatusDetails => ({
  name,
  ...(k.group ? { group: k.group } : {}),
  kind: k.plural,
});

export const notFound = (k: KindInfo, name: string): KubeStatusError =>
  new KubeStatusError(404, "NotFound", `${qualifiedResource(k)} "${name}" not found`, resourceDetails(k, name));
export const alreadyExists = (k: KindInfo, name: string): KubeStatusError =>
  new KubeStatusError(
    409,
    "AlreadyExists",
    `${qualifiedResource(k)} "${name}" already exists`,
    resourceDetails(k, name),
  );
export const conflict = (
  k: KindInfo,
  name: string,
  why = "the object has been modified; please apply your changes to the latest version and try again",
): KubeStatusError =>
  new KubeStatusError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(k)} "${name}": ${why}`,
    resourceDetails(k, name),
  );
export const badRequest = (message: string): KubeStatusError => new KubeStatusError(400, "BadRequest", message);
export const expired = (message: string): KubeStatusError => new KubeStatusError(410, "Expired", message);
export const forbidden = (k: KindInfo, name: string, why: string): KubeStatusError =>
  new KubeStatusError(
    403,
    "Forbidden",
    `${qualifiedResource(k)} "${name}" is forbidden: ${why}`,
    resourceDetails(k, name),
  );

/** A cause as field validation reports it (`spec.replicas: Invalid value: -1: must be …`). */
export const cause = (field: string, message: string, reason = "FieldValueInvalid"): StatusCause => ({
  reason,
  message,
  field,
});

export function invalid(k: KindInfo, name: string, causes: StatusCause[]): KubeStatusError {
  const kindName = k.group ? `${k.kind}.${k.group}` : k.kind;
  return new KubeStatusError(
    422,
    "Invalid",
    `${kindName} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`,
    { name, ...(k.group ? { group: k.group } : {}), kind: k.kind, causes },
  );
}
