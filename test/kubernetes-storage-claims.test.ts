/**
 * How an application's storage is laid out in its StatefulSet (substrates/kubernetes/storage-claims.ts):
 * one claim template per store and place in a unit, mounted at the same path in the agent's container
 * and every workload container, claims kept when the set scales down or goes; checked against the
 * official schema (kubernetes-models) too.
 */
import test from "ava";
import { StatefulSet } from "kubernetes-models/apps/v1";
import type { PodStorage } from "../substrates";
import { kubernetes } from "../substrates";

const manifest = (storage: PodStorage[]) =>
  kubernetes.statefulSetManifest({
    model: "m-uuid",
    namespace: "shop",
    app: "db",
    replicas: 1,
    agentImage: "steward/agent:0.1.0",
    containers: { postgres: { image: "postgres:15" } },
    storage,
  });
type Mounts = { volumeMounts?: { name: string; mountPath: string }[] };

test("a claim template per instance of each store, mounted in the agent and the workload containers; claims retained", (t) => {
  const set = manifest([
    { name: "wal", count: 1, size: 512, multiple: false, attributes: {} },
    {
      name: "data",
      count: 2,
      size: 1024,
      location: "/srv/db",
      multiple: true,
      attributes: { "storage-class": "fast" },
    },
  ]);
  t.notThrows(() => new StatefulSet(set as never).validate());
  const templates = set.spec!.volumeClaimTemplates!;
  t.deepEqual(
    templates.map((c) => [c.metadata!.name, c.spec!.resources!.requests!.storage, c.spec!.storageClassName]),
    [
      ["agent-state", "64Mi", undefined],
      ["storage-data-0", "1024Mi", "fast"],
      ["storage-data-1", "1024Mi", "fast"],
      ["storage-wal-0", "512Mi", undefined],
    ],
  );
  t.is(templates[1]!.metadata!.labels!["steward.io/claim"], "storage");
  t.is(templates[0]!.metadata!.labels!["steward.io/claim"], "agent-state");
  t.deepEqual(set.spec!.persistentVolumeClaimRetentionPolicy, { whenScaled: "Retain", whenDeleted: "Retain" });
  const want = [
    { name: "storage-data-0", mountPath: "/srv/db/0" },
    { name: "storage-data-1", mountPath: "/srv/db/1" },
    { name: "storage-wal-0", mountPath: "/var/lib/steward/storage/wal" },
  ];
  for (const c of set.spec!.template.spec!.containers as ({ name: string } & Mounts)[])
    t.deepEqual(
      (c.volumeMounts ?? []).filter((m) => m.name.startsWith("storage-")),
      want,
      `${c.name} mounts every instance`,
    );
  // The claims of unit N are the StatefulSet's `<template>-<set>-<N>`.
  t.is(kubernetes.claimNameOf("storage-data-1", "db", 3), "storage-data-1-db-3");
});

test("without storage the set has only the agent's claim; a long store name still makes a DNS label", (t) => {
  t.deepEqual(
    manifest([]).spec!.volumeClaimTemplates!.map((c) => c.metadata!.name),
    ["agent-state"],
  );
  const long = kubernetes.storageTemplateName("a".repeat(63), 12);
  t.true(long.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(long), long);
  t.not(long, kubernetes.storageTemplateName("a".repeat(62), 12));
});
