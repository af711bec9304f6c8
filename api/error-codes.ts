/**
 * Error codes: the coarse class of a failure, each with the HTTP status it is answered with. Its own file
 * so that the reason registry (error-reasons.ts) and the error class (errors.ts) both build on it without
 * importing each other.
 *
 * Codes are a permanent contract: append only, never rename or reuse one.
 */

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
  /** The work was stopped on purpose (an abort signal, a shutdown) before it finished; not a fault of what it waited on. */
  cancelled: "cancelled",
  /** What the work waited on (a host, an agent, a replica, the store) did not finish within its time. */
  deadlineExceeded: "deadline-exceeded",
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && (Object.values(ErrorCodes) as string[]).includes(value);
}

/**
 * HTTP has no status for "cancelled" (nginx's 499 is a client closing, not a server stopping): a controller
 * that stops work on purpose (shutting down, deposed) is unavailable to that request, so 503. A deadline the
 * controller waited on is 504, the gateway timeout: the controller is the gateway to the store, agents and
 * hosts that did not answer in time (408 is the client being slow to send, which it was not).
 */
export const httpStatusByCode: Record<ErrorCode, number> = {
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
  "cancelled": 503,
  "deadline-exceeded": 504,
};

/** Whether a call that failed with `code` may succeed if tried again, when nothing more is known. */
export const retryableByDefault = (code: ErrorCode): boolean =>
  code === "unavailable" || code === "conflict" || code === "deadline-exceeded";
