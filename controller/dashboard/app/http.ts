/**
 * Requests to the controller that served the page. The session token rides in its HttpOnly cookie;
 * every change also carries the session's CSRF token, which the page holds in memory only.
 */
import type { AnswerOf, BodyOf, ParamsOf, QueryOf, RouteSpec, SessionInfo, WireError } from "../../../api/browser";
import { CSRF_HEADER, methodOf, pathOf, routes } from "../../../api/browser";

/** A refusal from the controller, with its stable code and message. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

let csrf = "";

/** Called when the controller says the session ended, so the page can show the login form. */
let onSessionEnded: () => void = () => undefined;
export function whenSessionEnds(f: () => void): void {
  onSessionEnded = f;
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET") headers[CSRF_HEADER] = csrf;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? null : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(
      "unavailable",
      "the controller did not answer: is it running, and is this page's address still one of its replicas?",
      0,
    );
  }
  const text = await res.text();
  if (!res.ok) {
    let wire: Partial<WireError> = {};
    try {
      wire = JSON.parse(text) as WireError;
    } catch {
      /* not our shape: a proxy's page */
    }
    const err = new ApiError(
      wire.code ?? "internal",
      wire.message ?? `the controller answered ${res.status}`,
      res.status,
      wire.details ?? {},
    );
    if (res.status === 401 && path !== routes.session.path) onSessionEnded();
    throw err;
  }
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Calls a route of the table (api/routes.ts), typed by it. */
export function call<R extends RouteSpec>(
  route: R,
  params: ParamsOf<R>,
  body?: BodyOf<R>,
  query?: QueryOf<R>,
): Promise<AnswerOf<R>> {
  return request<AnswerOf<R>>(methodOf(route), pathOf(route, params, query), body);
}

export async function currentSession(): Promise<SessionInfo | undefined> {
  try {
    const s = await call(routes.session, {});
    csrf = s.csrf;
    return s;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return undefined;
    throw err;
  }
}

export async function logIn(user: string, password: string): Promise<SessionInfo> {
  const s = await call(routes.openSession, {}, { user, password });
  csrf = s.csrf;
  return s;
}

export async function logOut(): Promise<void> {
  await call(routes.closeSession, {}).catch(() => undefined);
  csrf = "";
}

/** Path segments, percent-encoded. */
export const seg = (s: string): string => encodeURIComponent(s);
