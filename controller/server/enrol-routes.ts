/**
 * What a cloud instance calls while cloud-init enrols it (substrates/cloud-init.ts): downloads of
 * the agent (and Node.js, for images without it) and the one-time exchange of its enrolment token
 * for the agent's configuration. The token travels in a header, never in a URL (proxies log URLs).
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ENROLMENT_HEADER, StewardError, agentConfigText, notFound } from "../../api";
import { AGENT_BUNDLE } from "../config";
import type { EnrolmentOps } from "../state";

export interface EnrolRoutesDeps {
  enrolments: EnrolmentOps;
  caCert: string;
  controllerAddresses: () => string[];
}

/** The files an enrolling instance may fetch. */
const FILES: Record<string, () => string> = {
  "main.js": () => AGENT_BUNDLE.main,
  "tool-client.js": () => AGENT_BUNDLE.toolClient,
  node: () => process.execPath,
};

function tokenOf(req: FastifyRequest): string {
  const v = req.headers[ENROLMENT_HEADER];
  if (typeof v !== "string" || !/^[A-Za-z0-9_-]{20,100}$/.test(v)) throw new StewardError("unauthorized", `an enrolment token is needed in the ${ENROLMENT_HEADER} header`);
  return v;
}

export function registerEnrolRoutes(app: FastifyInstance, deps: EnrolRoutesDeps): void {
  app.get("/v1/enrol/files/:file", async (req, reply) => {
    await deps.enrolments.check(tokenOf(req));
    const file = (req.params as { file: string }).file;
    const path = Object.hasOwn(FILES, file) ? FILES[file]!() : undefined;
    if (!path) throw notFound("enrolment file", file);
    const size = (await stat(path)).size;
    reply.header("content-type", "application/octet-stream").header("content-length", size);
    return reply.send(createReadStream(path));
  });

  // The answer holds the agent's credential: never recorded for replays.
  app.post("/v1/enrol", { config: { secretAnswer: true } }, async (req, reply) => {
    const { model, machine, credential } = await deps.enrolments.redeem(tokenOf(req));
    reply.header("content-type", "application/json");
    return reply.send(agentConfigText({ model, machine, credential, controllerAddresses: deps.controllerAddresses(), caCert: deps.caCert }));
  });
}
