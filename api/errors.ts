/**
 * Typed errors with stable codes. They cross the wire as `{code, reason, retryable, message, details}`
 * and are rebuilt into the same classes by {@link errorFromWire}, so callers branch on `code` and
 * `reason` (api/error-reasons.ts), never on message text.
 *
 * Codes are a permanent contract: never rename or reuse one.
 */
import { httpStatusByCode, isErrorCode, retryableByDefault } from "./error-codes";
import type { ErrorCode } from "./error-codes";
import type { ErrorReason } from "./error-reasons";
import { ErrorReasons, isErrorReason } from "./error-reasons";
export { ErrorCodes, isErrorCode } from "./error-codes";
export type { ErrorCode } from "./error-codes";
export { ErrorReasons, isErrorReason } from "./error-reasons";
export type { ErrorReason, ErrorReasonSpec } from "./error-reasons";

/** The reasons registered under `code`: a throw site cannot pair a reason with another code than its own. */
export type ReasonOf<C extends ErrorCode> = {
  [R in ErrorReason]: (typeof ErrorReasons)[R]["code"] extends C ? R : never;
}[ErrorReason];

export interface WireError {
  code: ErrorCode;
  /** Absent from older controllers and from errors no caller branches on. */
  reason?: ErrorReason;
  /** Absent from older controllers: then the reason's default, or the code's. */
  retryable?: boolean;
  message: string;
  details?: Record<string, unknown>;
}

/** The base of every error Steward raises on purpose. Check with {@link StewardError.isInstance}. */
export class StewardError<C extends ErrorCode = ErrorCode> extends Error {
  public readonly __stewardError = true;
  public readonly code: C;
  public readonly details: Record<string, unknown>;
  /** Why, finer than the code, where callers branch on it (api/error-reasons.ts). */
  public readonly reason: ErrorReason | undefined;
  /** True when the same call may succeed if simply tried again. */
  public readonly retryable: boolean;

  constructor(
    code: C,
    message: string,
    opts: { details?: Record<string, unknown>; reason?: ReasonOf<C>; retryable?: boolean; cause?: unknown } = {},
  ) {
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
    const out: WireError = {
      code: this.code,
      ...(this.reason ? { reason: this.reason } : {}),
      retryable: this.retryable,
      message: this.message,
    };
    if (Object.keys(this.details).length > 0) out.details = this.details;
    return out;
  }

  /** Works across realms and duplicate copies of this module (Pulumi serializes provider code). */
  static isInstance(err: unknown): err is StewardError {
    return typeof err === "object" && err !== null && (err as { __stewardError?: unknown }).__stewardError === true;
  }
}

/**
 * Whether the other side did not do the work, or not in time (`unavailable`, `deadline-exceeded`): the same
 * call may succeed later or at another replica. Not a refusal, and not a cancellation (which someone asked for).
 * Reads `code` only, so it also holds for errors rebuilt by hand from the wire.
 */
export function isUnavailable(err: unknown): boolean {
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === "unavailable" || code === "deadline-exceeded";
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
    const code: ErrorCode = isErrorCode(w.code) ? w.code : "internal";
    // An older controller put some reasons in details only; a reason this client does not know is dropped.
    const legacy = w.details?.reason;
    const reason = isErrorReason(w.reason) ? w.reason : isErrorReason(legacy) ? legacy : undefined;
    return new StewardError(code, String(w.message ?? "unknown error"), {
      details: w.details,
      ...(reason ? { reason } : {}),
      ...(typeof w.retryable === "boolean" ? { retryable: w.retryable } : {}),
    });
  }
  // A bodiless answer comes from something in front of a controller (a proxy, a load balancer) or from a
  // controller cut off mid-answer: a gateway timeout (504) or a request timeout (408) is a deadline that
  // passed, worth trying again.
  const byStatus: Record<number, ErrorCode> = {
    400: "invalid-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    408: "deadline-exceeded",
    409: "conflict",
    429: "rate-limited",
    503: "unavailable",
    504: "deadline-exceeded",
  };
  const code: ErrorCode = byStatus[httpStatus] ?? (httpStatus >= 500 ? "internal" : "invalid-request");
  return new StewardError(code, `controller answered HTTP ${httpStatus}`, { details: { body } });
}
