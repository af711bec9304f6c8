/**
 * Exports one whole model as a {@link ModelExport}, every document read in one store transaction
 * (one revision: a consistent snapshot), the kinds to read and keep taken from the registry.
 * Operator bundles are read after, by content hash: they never change, and one gone meanwhile is
 * reported as a conflict to retry.
 */
import type { Bundle } from "../../api";
import { StewardError, notFound } from "../../api";
import type { KeyValue, Op, Store } from "../store";
import type { ApplicationDoc, ControllerDoc, LeaderDoc } from "./documents";
import { modelDocOf } from "./model-placement";
import type { ImportOrigin } from "./imported-revisions";
import { servedVersion } from "./imported-revisions";
import { keys } from "./keys";
import type { ModelExport } from "./model-format";
import { MODEL_EXPORT_FORMAT, MODEL_EXPORT_VERSION } from "./model-format";
import type { KindName } from "./registry";
import { EXPORTED_KINDS, classifyKey, keyOf } from "./registry";
import { decode, docs } from "./doc-kinds";

export async function exportModel(store: Store, uuid: string, now = new Date()): Promise<ModelExport> {
  // Every root a model kind lives under (`/models/<m>`, `/tasks/<m>/`, …): the model's key and one range per root.
  const roots = [...new Set(EXPORTED_KINDS.map((k) => k.path[0] as string))];
  const ops: Op[] = [
    { type: "get", key: keys.controller },
    { type: "get", key: keys.model(uuid) },
    ...roots.map((r) => ({ type: "range" as const, prefix: `/${r}/${uuid}/` })),
  ];
  const res = await store.txn({ success: ops });
  const [controllerKv, modelKv, ...ranges] = res.responses;
  if (!modelKv?.[0]) throw notFound("model", uuid);
  const controller = JSON.parse(controllerKv?.[0]?.value ?? "{}") as Partial<ControllerDoc>;
  const kvs: KeyValue[] = [modelKv[0], ...ranges.flat()];

  // An imported model serves its databags at the source's versions: export those, so a second move keeps them too.
  const originKv = kvs.find((kv) => classifyKey(kv.key)?.kind.name === "imported-revisions");
  const origin: ImportOrigin | undefined = originKv
    ? { ...decode(docs.importedRevisions, originKv.value), importRevision: originKv.modRevision }
    : undefined;

  const documents: ModelExport["documents"] = {};
  const bags: Record<string, number> = {};
  // Each secret revision's content, still sealed with this controller's key: sealExportSecrets seals it for the reader.
  const secretRevisions: Record<string, string> = {};
  for (const kv of kvs) {
    const c = classifyKey(kv.key);
    if (c?.model === uuid && c.kind.name === "secret-revision") {
      secretRevisions[c.id] = decode(docs.secretRevision, kv.value).sealed;
      continue;
    }
    if (!c || c.model !== uuid || c.kind.exported !== true) continue;
    let doc = JSON.parse(kv.value) as unknown;
    const name: KindName = c.kind.name;
    if (name === "relation-data") bags[c.id] = servedVersion(origin, c.id, kv.modRevision);
    if (name === "leader-data") bags[`leader/${c.id}`] = servedVersion(origin, `leader/${c.id}`, kv.modRevision);
    // A leader's lease is the source store's: the import grants one of the target's.
    if (name === "leader") {
      const { lease: _, ...rest } = doc as LeaderDoc;
      doc = rest;
    }
    (documents[name] ??= {})[c.id] = doc;
  }
  // A model stored before placements is exported in the current shape.
  const model = modelDocOf(documents.model![""]);
  documents.model![""] = model;
  const apps = Object.values(documents.app ?? {}) as ApplicationDoc[];
  return {
    format: MODEL_EXPORT_FORMAT,
    version: MODEL_EXPORT_VERSION,
    exportedAt: now.toISOString(),
    source: { controller: controller.uuid ?? "", controllerName: controller.name ?? "", revision: res.revision },
    documents,
    versions: { revision: servedVersion(origin, "", res.revision), bags },
    operators: await readOperators(store, [...new Set(apps.map((a) => a.operator.hash))]),
    references: { ...(model.placement.credential ? { credential: model.placement.credential } : {}) },
    ...(Object.keys(secretRevisions).length > 0
      ? { secrets: { sealing: { kind: "controller" as const }, revisions: secretRevisions } }
      : {}),
  };
}

/** The bundles with these hashes, from their chunks (as putOperator stored them). */
async function readOperators(store: Store, hashes: string[]): Promise<Record<string, Bundle>> {
  const out: Record<string, Bundle> = {};
  for (const hash of hashes) {
    const res = await store.txn({
      success: [
        { type: "get", key: keys.operator(hash) },
        { type: "range", prefix: keys.operatorChunks(hash) },
      ],
    });
    const docKv = res.responses[0]?.[0];
    const chunks = res.responses[1] ?? [];
    const doc = docKv ? decode(docs.operator, docKv.value) : undefined;
    if (!doc || chunks.length !== doc.chunks) {
      throw new StewardError(
        "conflict",
        `operator ${hash} changed while the model was exported (an application was upgraded or removed); export again`,
        { retryable: true },
      );
    }
    // Chunk keys end in their index: order by number, not by key text (10 sorts before 2).
    const ordered = chunks
      .map((kv) => ({ i: Number(kv.key.slice(kv.key.lastIndexOf("/") + 1)), kv }))
      .sort((a, b) => a.i - b.i);
    out[hash] = JSON.parse(
      Buffer.concat(ordered.map((c) => Buffer.from(c.kv.value, "base64"))).toString("utf8"),
    ) as Bundle;
  }
  return out;
}

/** The key of an exported document, for the import (and for tests comparing stores). */
export function exportedKey(kind: KindName, uuid: string, id: string): string {
  return keyOf(
    EXPORTED_KINDS.find((k) => k.name === kind)!,
    uuid,
    id,
  );
}
