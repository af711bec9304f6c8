/**
 * A new replica's data directory, made by the leader: this controller's CA (certificate and key),
 * a server certificate for the replica's host, and its configuration (join the etcd cluster as
 * `initialCluster` says). Written over SSH for a spare host; sealed and collected by a cloud instance.
 */
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { ControllerConfig } from "../config";
import { dataFiles, sourceKind } from "../config";

export async function replicaDataFiles(
  o: { dataDir: string; config: ControllerConfig },
  host: string,
  name: string,
  initialCluster: string,
): Promise<Record<string, string>> {
  // eslint-disable-next-line @typescript-eslint/consistent-type-imports
  const { issueServerCertificate } = require("../security/pki") as typeof import("../security/pki");
  const [caCert, caKey] = await Promise.all(
    [dataFiles.caCert, dataFiles.caKey].map((f) => readFile(join(o.dataDir, f), "utf8")),
  );
  const cert = await issueServerCertificate({ certPem: caCert!, keyPem: caKey! }, [host]);
  const own = o.config.member!;
  const releases = await releasesForReplica(o);
  const config: ControllerConfig = {
    name: o.config.name,
    listen: { host: "0.0.0.0", port: o.config.listen.port },
    advertise: [`${host}:${o.config.listen.port}`],
    store: { backend: "etcd", endpoints: [`https://127.0.0.1:${own.clientPort ?? 2379}`], tls: true },
    ...(o.config.leadershipLeaseSeconds ? { leadershipLeaseSeconds: o.config.leadershipLeaseSeconds } : {}),
    ...(o.config.kubernetes ? { kubernetes: o.config.kubernetes } : {}),
    // What a superuser set for local machines holds on every replica (a replica's host is not local).
    ...(o.config.localMachines ? { localMachines: o.config.localMachines } : {}),
    ...(releases ? { releases: releases.config } : {}),
    member: {
      name,
      host,
      initialCluster,
      initialState: "existing",
      clusterToken: own.clusterToken,
      ...(own.clientPort ? { clientPort: own.clientPort } : {}),
      ...(own.peerPort ? { peerPort: own.peerPort } : {}),
      ...(own.heartbeatMs ? { heartbeatMs: own.heartbeatMs } : {}),
      ...(own.electionMs ? { electionMs: own.electionMs } : {}),
    },
  };
  return {
    [dataFiles.caCert]: caCert!,
    [dataFiles.caKey]: caKey!,
    [dataFiles.serverCert]: cert.certPem,
    [dataFiles.serverKey]: cert.keyPem,
    [dataFiles.config]: JSON.stringify(config, null, 2) + "\n",
    ...(releases?.caPem ? { [dataFiles.releaseSourceCa]: releases.caPem } : {}),
  };
}

/**
 * The release settings a new replica needs to hold and verify releases once it leads: the keys
 * controller.json trusts and how often to look, always; the source when it is an HTTPS URL (every
 * replica reaches it), with its CAs copied into the replica's data directory. A directory source is
 * a path on the first replica's host only, so it is not passed on.
 */
async function releasesForReplica(o: {
  dataDir: string;
  config: ControllerConfig;
}): Promise<{ config: NonNullable<ControllerConfig["releases"]>; caPem?: string } | undefined> {
  const r = o.config.releases;
  if (!r) return undefined;
  const https = r.source && sourceKind(r.source) === "https" ? r.source : undefined;
  const caPem = https && r.caFile ? await readFile(resolve(o.dataDir, r.caFile), "utf8") : undefined;
  return {
    config: {
      ...(r.keys ? { keys: r.keys } : {}),
      ...(r.pollSeconds ? { pollSeconds: r.pollSeconds } : {}),
      ...(https ? { source: https } : {}),
      ...(caPem ? { caFile: dataFiles.releaseSourceCa } : {}),
    },
    ...(caPem ? { caPem } : {}),
  };
}
