/**
 * Typed errors with stable codes. They cross the wire as `{code, reason, retryable, message, details}`
 * and are rebuilt into the same classes by {@link errorFromWire}, so callers branch on `code` and
 * `reason` (api/error-reasons.ts), never on message text.
 *
 * Codes are a permanent contract: never rename or reuse one.
 */
import type { ErrorReason } from "./error-reasons";
import { ErrorReasons, isErrorReason } from "./error-reasons";
export { ErrorReasons, isErrorReason } from "./error-reasons";
export type { ErrorReason, ErrorReasonSpec } from "./error-reasons";

export const ErrorCodes = {
  invalidRequest: "invalid-request",
  notFound: "not-found",
  unauthorized: "unauthorized",
  forbidden: "forbidden",
  alreadyExists: "already-exists",
  conflict: "conflict",
  /** Too many attempts (failed logins): wait the `Retry-After` seconds and try again. */
  rateLimited: "rate-limited",
  operatorInvalid: "operator-invalid",
  configInvalid: "config-invalid",
  quotaExceeded: "quota-exceeded",
  unavailable: "unavailable",
  /** The model moved to another controller: `details` says where (api/migration.ts ModelMoved). */
  moved: "moved",
  internal: "internal",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const httpStatusByCode: Record<ErrorCode, number> = {
  "invalid-request": 400,
  "operator-invalid": 400,
  "config-invalid": 400,
  "quota-exceeded": 413,
  "unauthorized": 401,
  "forbidden": 403,
  "not-found": 404,
  "already-exists": 409,
  "conflict": 409,
  "rate-limited": 429,
  "unavailable": 503,
  "moved": 410,
  "internal": 500,
};

export interface WireError {
  code: ErrorCode;
  /** Absent from older controllers and from errors no caller branches on. */
  reason?: ErrorReason;
  /** Absent from older controllers: then the reason's default, or the code's. */
  retryable?: boolean;
  message: string;
  details?: Record<string, unknown>;
}

/** Whether a call that failed with `code` may succeed if tried again, when nothing more is known. */
const retryableByDefault = (code: ErrorCode): boolean => code === "unavailable" || code === "conflict";

/** The base of every error Steward raises on purpose. Check with {@link StewardError.isInstance}. */
export class StewardError extends Error {
  public readonly __stewardError = true;
  public readonly code: ErrorCode;
  public readonly details: Record<string, unknown>;
  /** Why, finer than the code, where callers branch on it (api/error-reasons.ts). */
  public readonly reason: ErrorReason | undefined;
  /** True when the same call may succeed if simply tried again. */
  public readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, opts: { details?: Record<string, unknown>; reason?: ErrorReason; retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "StewardError";
    this.code = code;
    this.details = opts.details ?? {};
    this.reason = opts.reason;
    this.retryable = opts.retryable ?? (opts.reason ? ErrorReasons[opts.reason].retryable : retryableByDefault(code));
  }

  get httpStatus(): number {
    return httpStatusByCode[this.code] ?? 500;
  }

  toWire(): WireError {
    const out: WireError = { code: this.code, ...(this.reason ? { reason: this.reason } : {}), retryable: this.retryable, message: this.message };
    if (Object.keys(this.details).length > 0) out.details = this.details;
    return out;
  }

  /** Works across realms and duplicate copies of this module (Pulumi serializes provider code). */
  static isInstance(err: unknown): err is StewardError {
    return typeof err === "object" && err !== null && (err as { __stewardError?: unknown }).__stewardError === true;
  }
}

/** Bad input: names what was wrong and, where it can, how to fix it. */
export function invalidRequest(message: string, details?: Record<string, unknown>): StewardError {
  return new StewardError("invalid-request", message, { details });
}

export function notFound(kind: string, name: string): StewardError {
  return new StewardError("not-found", `${kind} "${name}" not found`, { details: { kind, name } });
}

export function alreadyExists(kind: string, name: string): StewardError {
  return new StewardError("already-exists", `${kind} "${name}" already exists`, { details: { kind, name } });
}

export function errorFromWire(body: unknown, httpStatus: number): StewardError {
  if (typeof body === "object" && body !== null && typeof (body as WireError).code === "string") {
    const w = body as WireError;
    const code = (Object.values(ErrorCodes) as string[]).includes(w.code) ? w.code : "internal";
    // An older controller put some reasons in details only; a reason this client does not know is dropped.
    const legacy = w.details?.reason;
    const reason = isErrorReason(w.reason) ? w.reason : isErrorReason(legacy) ? legacy : undefined;
    return new StewardError(code, String(w.message ?? "unknown error"), {
      details: w.details, ...(reason ? { reason } : {}), ...(typeof w.retryable === "boolean" ? { retryable: w.retryable } : {}),
    });
  }
  const byStatus: Record<number, ErrorCode> = { 400: "invalid-request", 401: "unauthorized", 403: "forbidden", 404: "not-found", 409: "conflict", 429: "rate-limited", 503: "unavailable" };
  const code: ErrorCode = byStatus[httpStatus] ?? (httpStatus >= 500 ? "internal" : "invalid-request");
  return new StewardError(code, `controller answered HTTP ${httpStatus}`, { details: { body } });
}
