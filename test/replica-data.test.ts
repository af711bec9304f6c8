/**
 * A new replica's data directory (controller/cluster/replica-data.ts), as the leader makes it for a
 * spare host or a cloud instance: it gets the release settings the first replica was bootstrapped
 * with (the trusted keys, the poll interval, an HTTPS source and its CAs, copied), so that it holds
 * and verifies releases once it leads; a directory source, a path on the first host only, is not
 * passed on. Without this, a controller whose leadership moved to a replica added later stopped
 * looking for releases and trusted no key controller.json named.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ControllerConfig } from "../controller";
import {
  createCertificateAuthority,
  dataFiles,
  generateReleaseKey,
  readControllerConfig,
  releaseSourceOf,
  replicaDataFiles,
} from "../controller";

const KEY = generateReleaseKey().publicKey;

async function firstReplica(
  t: ExecutionContext,
  releases: ControllerConfig["releases"],
): Promise<{
  dataDir: string;
  config: ControllerConfig;
}> {
  const dataDir = await mkdtemp(join(tmpdir(), "steward-replica-data-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const ca = await createCertificateAuthority("prod");
  await writeFile(join(dataDir, dataFiles.caCert), ca.certPem);
  await writeFile(join(dataDir, dataFiles.caKey), ca.keyPem);
  const config: ControllerConfig = {
    name: "prod",
    listen: { host: "0.0.0.0", port: 17070 },
    store: { backend: "etcd", endpoints: ["https://127.0.0.1:2379"], tls: true },
    member: {
      name: "r0",
      host: "10.0.0.1",
      initialCluster: "r0=https://10.0.0.1:2380",
      clusterToken: "t",
      initialState: "new",
    },
    ...(releases ? { releases } : {}),
  };
  return { dataDir, config };
}

test("an HTTPS release source, its CAs, the keys and the poll interval go to a new replica", async (t) => {
  const first = await firstReplica(t, {
    source: "https://releases.example.test/steward",
    keys: [KEY],
    pollSeconds: 30,
    // Relative: in the first replica's data directory.
    caFile: "release-ca.pem",
  });
  await writeFile(
    join(first.dataDir, "release-ca.pem"),
    "-----BEGIN CERTIFICATE-----\nreleases\n-----END CERTIFICATE-----\n",
  );
  const files = await replicaDataFiles(first, "10.0.0.2", "r1", "r0=https://10.0.0.1:2380,r1=https://10.0.0.2:2380");
  const config = JSON.parse(files[dataFiles.config]!) as ControllerConfig;
  t.deepEqual(config.releases, {
    keys: [KEY],
    pollSeconds: 30,
    source: "https://releases.example.test/steward",
    caFile: dataFiles.releaseSourceCa,
  });
  t.is(files[dataFiles.releaseSourceCa], "-----BEGIN CERTIFICATE-----\nreleases\n-----END CERTIFICATE-----\n");
  // On the new replica, the configuration is accepted and its caFile is the copy in its data directory.
  const replicaDir = await mkdtemp(join(tmpdir(), "steward-replica-data-"));
  t.teardown(() => rm(replicaDir, { recursive: true, force: true }));
  await writeFile(join(replicaDir, dataFiles.config), files[dataFiles.config]!);
  const read = await readControllerConfig(replicaDir);
  const source = releaseSourceOf(read, replicaDir);
  t.is(source?.https?.caFile, join(replicaDir, dataFiles.releaseSourceCa));
  t.deepEqual(source?.keys, [KEY]);
});

test("a directory release source stays on the first replica's host; its keys still go", async (t) => {
  const first = await firstReplica(t, { source: "/srv/steward-releases", keys: [KEY] });
  const files = await replicaDataFiles(first, "10.0.0.2", "r1", "r0=https://10.0.0.1:2380,r1=https://10.0.0.2:2380");
  const config = JSON.parse(files[dataFiles.config]!) as ControllerConfig;
  t.deepEqual(config.releases, { keys: [KEY] });
  t.false(dataFiles.releaseSourceCa in files);
});

test("a controller without release settings gives none", async (t) => {
  const first = await firstReplica(t, undefined);
  const files = await replicaDataFiles(first, "10.0.0.2", "r1", "r0=https://10.0.0.1:2380,r1=https://10.0.0.2:2380");
  t.false("releases" in (JSON.parse(files[dataFiles.config]!) as ControllerConfig));
});
