/**
 * How `steward secrets` and `show-secret` print secrets' metadata: who may read each one (its grants)
 * and who reads which revision (its consumers' tracked revisions, the #21499 ask). Values are never
 * here; show-secret --reveal adds them itself.
 */
import type { SecretGrantInfo, SecretInfo } from "../api/core";
import { table } from "../api/core";

/** `web`, `web/0`, `db (relation 3)`. */
export function grantText(g: SecretGrantInfo): string {
  return `${g.unit ?? g.app}${g.relationId !== undefined ? ` (relation ${g.relationId})` : ""}`;
}

/** `1: web/0 web/1; 2: web/2`: each revision some unit tracks, with those units. */
export function trackingText(s: SecretInfo): string {
  return s.revisions
    .filter((r) => r.trackedBy.length > 0)
    .map((r) => `${r.revision}: ${r.trackedBy.join(" ")}`)
    .join("; ");
}

export function rotationText(s: SecretInfo): string {
  return s.rotate === "never" ? "never" : `${s.rotate}${s.nextRotateAt ? ` (next ${s.nextRotateAt})` : ""}`;
}

/** The table of `steward secrets`. */
export function secretsTable(secrets: SecretInfo[]): string {
  return table(
    ["URI", "Name", "Owner", "Revision", "Rotation", "Readers", "Tracking"],
    secrets.map((s) => [
      s.uri,
      s.name ?? s.label ?? "",
      s.owner,
      String(s.latestRevision),
      rotationText(s),
      s.grants.map(grantText).join(", ") || "-",
      trackingText(s) || "-",
    ]),
  );
}

/** A secret for YAML or JSON output, in the order people read it (metadata first, revisions last). */
export function secretDocument(s: SecretInfo): Record<string, unknown> {
  return {
    uri: s.uri,
    ...(s.name !== undefined ? { name: s.name } : {}),
    ...(s.label !== undefined ? { label: s.label } : {}),
    ...(s.description !== undefined ? { description: s.description } : {}),
    owner: s.owner,
    revision: s.latestRevision,
    rotate: s.rotate,
    ...(s.nextRotateAt !== undefined ? { "next-rotate": s.nextRotateAt } : {}),
    ...(s.expireAt !== undefined ? { expires: s.expireAt } : {}),
    created: s.createdAt,
    updated: s.updatedAt,
    readers: s.grants.map(grantText),
    revisions: s.revisions.map((r) => ({
      revision: r.revision,
      created: r.createdAt,
      ...(r.expireAt !== undefined ? { expires: r.expireAt } : {}),
      "tracked-by": r.trackedBy,
    })),
  };
}
