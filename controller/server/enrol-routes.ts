/**
 * What a cloud instance calls while cloud-init sets it up (substrates/cloud-init.ts): downloads of
 * the agent or the controller (and Node.js and etcd, for images without them), the one-time
 * exchange of a machine's enrolment token for its agent's configuration, and a replica's collection
 * of its data directory. The token travels in a header, never in a URL (proxies log URLs).
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import { StewardError, agentConfigText, notFound, routes } from "../../api";
import { enrolmentFiles } from "../config";
import type { Sealer } from "../security/sealing";
import type { EnrolmentOps, StateCache } from "../state";
import { replicaDataPurpose } from "../state";
import { routeOn } from "../access/route";

export interface EnrolRoutesDeps {
  cache: StateCache;
  enrolments: EnrolmentOps;
  sealer: Sealer;
  caCert: string;
  controllerAddresses: () => string[];
}

export function registerEnrolRoutes(app: FastifyInstance, deps: EnrolRoutesDeps): void {
  const route = routeOn(app, deps.cache);
  const files = enrolmentFiles();
  route(routes.enrolmentFile, async ({ req, reply, enrolmentToken }) => {
    await deps.enrolments.check(enrolmentToken);
    const file = (req.params as { "*": string })["*"];
    const path = files.get(file);
    if (!path) throw notFound("enrolment file", file);
    const size = (await stat(path)).size;
    reply.header("content-type", "application/octet-stream").header("content-length", size);
    return reply.send(createReadStream(path));
  });

  // The answer holds the agent's credential: never recorded for replays.
  route(routes.enrol, async ({ reply, enrolmentToken }) => {
    const { model, machine, credential } = await deps.enrolments.redeem(enrolmentToken);
    reply.header("content-type", "application/json");
    return reply.send(
      agentConfigText({
        model,
        machine,
        credential,
        controllerAddresses: deps.controllerAddresses(),
        caCert: deps.caCert,
      }),
    );
  });

  // A replica's data holds the CA key: handed over once, and only after the leader left it.
  route(routes.enrolReplica, async ({ reply, enrolmentToken: token }) => {
    const sealed = await deps.enrolments.collectReplicaData(token);
    if (!sealed)
      throw new StewardError("conflict", "not ready: the leader has not added this replica yet; ask again shortly", {
        retryable: true,
      });
    reply.header("content-type", "application/json");
    return reply.send(`{"files":${deps.sealer.open(replicaDataPurpose(token), sealed)}}`);
  });
}
