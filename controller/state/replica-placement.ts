/**
 * The replica cloud document in its current shape, whatever shape it was written in (as
 * model-placement.ts does for models): apart from cluster-docs.ts, which imports the keys, so that
 * the registry of kinds can name it as the kind's upgrade without an import circle.
 */
import type { ReplicaPlacement, ReplicaSubstrate } from "../../api";
import { contractOf } from "../../api";

/**
 * `raw` (a stored replica cloud of any shape this controller reads) as a placement. Before
 * placements it held the kind's settings in a bag named after the kind (`aws: {…}`), and on
 * Kubernetes sometimes a credential an older bootstrap stored, which its pods never used: it is
 * dropped. Read through here by the cache, so stores and backups of the previous build need no
 * rewriting; the next set-replica-cloud stores the new shape.
 */
export function replicaCloudDocOf(raw: unknown): ReplicaPlacement {
  const doc = raw as Record<string, unknown>;
  const substrate = doc.substrate as ReplicaSubstrate;
  const credential =
    contractOf(substrate).replicaHosts === "instances" && typeof doc.credential === "string"
      ? { credential: doc.credential }
      : {};
  return { substrate, ...credential, settings: doc.settings ?? doc[substrate] ?? {} } as ReplicaPlacement;
}

/**
 * What the store holds for a replica cloud: the placement and, for replicas of the previous build
 * during a rolling upgrade, the settings again under the kind's name as that build reads them.
 */
export function storedReplicaCloudOf(doc: ReplicaPlacement): Record<string, unknown> {
  return { ...doc, [doc.substrate]: doc.settings };
}
