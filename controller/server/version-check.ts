/**
 * The compatibility window (api/versions.ts) at the controller's door: a request or WebSocket upgrade
 * whose `steward-version` header names a client or agent this controller cannot work with is refused
 * before anything else is done for it, with a message naming both versions and what to upgrade. Every
 * answer names the controller's own version, so a newer client can refuse an older controller too. A
 * request without the header (a browser, curl) is let through: the dashboard is served by the
 * controller itself, and curl users read the answer.
 */
import type { FastifyInstance } from "fastify";
import type { IncomingHttpHeaders } from "node:http";
import { STEWARD_VERSION, StewardError, VERSION_HEADER, versionProblem } from "../../api";

/** Agents authenticate as `Agent …` and enrol with the enrolment token; everyone else is a client. */
function peerOf(headers: IncomingHttpHeaders, url: string): "agent" | "client" {
  const auth = headers.authorization ?? "";
  return auth.startsWith("Agent ") || url.split("?")[0] === "/v1/enrol" ? "agent" : "client";
}

/** Why this request's sender may not talk to this controller, or undefined (compatible, or unsaid). */
export function versionRefusal(headers: IncomingHttpHeaders, url: string): StewardError | undefined {
  const said = headers[VERSION_HEADER];
  if (said === undefined) return undefined;
  const problem = versionProblem(peerOf(headers, url), [said].flat()[0] ?? "", STEWARD_VERSION);
  return problem ? new StewardError("invalid-request", problem, { reason: "version-incompatible" }) : undefined;
}

export function installVersionCheck(app: FastifyInstance): void {
  app.addHook("onRequest", async (req) => {
    const refusal = versionRefusal(req.headers, req.url);
    if (refusal) throw refusal;
  });
  app.addHook("onSend", async (_req, reply) => {
    reply.header(VERSION_HEADER, STEWARD_VERSION);
  });
}
