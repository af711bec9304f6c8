/**
 * What a cloud instance calls while cloud-init sets it up (substrates/cloud-init.ts): downloads of
 * the agent or the controller (and Node.js and etcd, for images without them), the one-time
 * exchange of a machine's enrolment token for its agent's configuration, and a replica's collection
 * of its data directory. The token travels in a header, never in a URL (proxies log URLs).
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ENROLMENT_HEADER, StewardError, agentConfigText, notFound } from "../../api";
import { enrolmentFiles } from "../config";
import type { Sealer } from "../security/sealing";
import type { EnrolmentOps } from "../state";
import { replicaDataPurpose } from "../state";

export interface EnrolRoutesDeps {
  enrolments: EnrolmentOps;
  sealer: Sealer;
  caCert: string;
  controllerAddresses: () => string[];
}


function tokenOf(req: FastifyRequest): string {
  const v = req.headers[ENROLMENT_HEADER];
  if (typeof v !== "string" || !/^[A-Za-z0-9_-]{20,100}$/.test(v)) throw new StewardError("unauthorized", `an enrolment token is needed in the ${ENROLMENT_HEADER} header`);
  return v;
}

export function registerEnrolRoutes(app: FastifyInstance, deps: EnrolRoutesDeps): void {
  const files = enrolmentFiles();
  app.get("/v1/enrol/files/*", async (req, reply) => {
    await deps.enrolments.check(tokenOf(req));
    const file = (req.params as { "*": string })["*"];
    const path = files.get(file);
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

  // A replica's data holds the CA key: handed over once, and only after the leader left it.
  app.post("/v1/enrol/replica", { config: { secretAnswer: true } }, async (req, reply) => {
    const token = tokenOf(req);
    const sealed = await deps.enrolments.collectReplicaData(token);
    if (!sealed) throw new StewardError("conflict", "not ready: the leader has not added this replica yet; ask again shortly", { retryable: true });
    reply.header("content-type", "application/json");
    return reply.send(`{"files":${deps.sealer.open(replicaDataPurpose(token), sealed)}}`);
  });
}
