/**
 * PodDisruptionBudgets at work, after "Specifying a Disruption Budget for your Application" and the
 * API-initiated eviction page (kubernetes.io/docs/concepts/scheduling-eviction/api-eviction):
 * - the disruption controller keeps each budget's status: `expectedPods` (with an integer
 *   minAvailable, the selected pods; otherwise the replicas of their controllers), `currentHealthy`
 *   (selected pods Ready and not terminating), `desiredHealthy` (minAvailable, or expected −
 *   maxUnavailable; percentages of expected, rounded up), `disruptionsAllowed` = max(0, healthy −
 *   desired), `observedGeneration` and the DisruptionAllowed condition;
 * - the `pods/{name}/eviction` subresource (policy/v1 Eviction) deletes the pod gracefully when its
 *   budget allows a disruption (and counts it against the budget), answers 429 TooManyRequests
 *   when it does not, 500 when more than one budget selects the pod; a pod that is not Running is
 *   evicted without a check. The answer to an accepted eviction is a Success Status, 201.
 */
import { Eviction } from "kubernetes-models/policy/v1";
import { kindFor, validateSchema } from "./kinds";
import type { KubeObject } from "./kinds";
import { podReady } from "./kubelet";
import { matchesSelector } from "./selectors";
import type { ApiState, StoreEvent } from "./state";
import { KubeStatusError, badRequest, cause } from "./status";

const PDBS = kindFor("policy", "v1", "poddisruptionbudgets")!;
const PODS = kindFor("", "v1", "pods")!;
const STS = kindFor("apps", "v1", "statefulsets")!;

const healthy = (p: KubeObject): boolean =>
  !p.metadata.deletionTimestamp && p.status?.phase === "Running" && podReady(p);

/** An IntOrString against a total: an integer, or a percentage of it rounded up. */
function amount(v: number | string, total: number): number {
  if (typeof v === "number") return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) throw new Error(`not an integer or a percentage: ${v}`);
  return Math.ceil((Number(m[1]) * total) / 100);
}

export class DisruptionController {
  private readonly unsubscribe: () => void;
  private scheduled = false;

  constructor(private readonly state: ApiState) {
    this.unsubscribe = state.subscribe((e) => this.observe(e));
  }

  stop(): void {
    this.unsubscribe();
  }

  private observe(e: StoreEvent): void {
    if (e.kind !== PDBS && e.kind !== PODS && e.kind !== STS) return;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.syncAll();
    });
  }

  private syncAll(): void {
    for (const pdb of this.state.list(PDBS)) {
      // A status the schema refuses is a bug here, not a race: say so.
      try {
        this.sync(pdb);
      } catch (err) {
        if (!(err instanceof KubeStatusError && err.code === 409))
          console.error(`fake disruption controller: ${(err as Error).stack ?? String(err)}`);
      }
    }
  }

  private sync(pdb: KubeObject): void {
    const ns = pdb.metadata.namespace!;
    const pods = this.state.list(PODS, ns, (p) => matchesSelector(pdb.spec?.selector, p.metadata.labels));
    const { minAvailable, maxUnavailable } = pdb.spec ?? {};
    let expected = pods.length;
    if (!(typeof minAvailable === "number")) {
      const owners = new Map<string, number>();
      for (const p of pods) {
        const ref = p.metadata.ownerReferences?.find((r) => r.controller && r.kind === "StatefulSet");
        const sts = ref && this.state.find(STS, ns, ref.name);
        if (sts && sts.metadata.uid === ref!.uid) owners.set(ref!.uid, sts.spec?.replicas ?? 1);
      }
      expected = [...owners.values()].reduce((a, b) => a + b, 0);
    }
    const current = pods.filter(healthy).length;
    const desired =
      minAvailable !== undefined
        ? amount(minAvailable, expected)
        : maxUnavailable !== undefined
          ? Math.max(0, expected - amount(maxUnavailable, expected))
          : 0;
    const allowed = Math.max(0, current - desired);
    this.state.updateStatus(PDBS, ns, pdb.metadata.name!, pdb.metadata.uid!, (s) => {
      s.observedGeneration = pdb.metadata.generation;
      s.expectedPods = expected;
      s.currentHealthy = current;
      s.desiredHealthy = desired;
      s.disruptionsAllowed = allowed;
      // A metav1.Condition (reason and message required), not a pod condition.
      const status = allowed > 0 ? "True" : "False";
      const old = (s.conditions ?? []).find((c: { type: string }) => c.type === "DisruptionAllowed");
      s.conditions = [
        {
          type: "DisruptionAllowed",
          status,
          observedGeneration: pdb.metadata.generation,
          lastTransitionTime:
            old?.status === status
              ? old.lastTransitionTime
              : new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace(/\.000Z$/, "Z"),
          reason: allowed > 0 ? "SufficientPods" : "InsufficientPods",
          message: "",
        },
      ];
    });
  }
}

/** POST pods/{name}/eviction. */
export function evict(state: ApiState, ns: string, name: string, body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null) throw badRequest("the body must be an Eviction");
  const eviction = { apiVersion: "policy/v1", kind: "Eviction", ...(body as Record<string, unknown>) } as KubeObject;
  eviction.metadata ??= {};
  validateSchema({ ...PDBS, kind: "Eviction" }, eviction, Eviction as never, "Eviction");
  if (eviction.metadata.name !== undefined && eviction.metadata.name !== name)
    throw badRequest(`name in URL does not match name in Eviction object`);
  const pod = state.get(PODS, ns, name);
  const deleteOptions = (eviction.deleteOptions ?? {}) as {
    gracePeriodSeconds?: number;
    preconditions?: { uid?: string; resourceVersion?: string };
  };
  const remove = (): Record<string, unknown> => {
    state.delete(PODS, ns, name, {
      ...(deleteOptions.gracePeriodSeconds !== undefined
        ? { gracePeriodSeconds: deleteOptions.gracePeriodSeconds }
        : {}),
      ...(deleteOptions.preconditions ? { preconditions: deleteOptions.preconditions } : {}),
    });
    return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 };
  };
  if (pod.metadata.deletionTimestamp || pod.status?.phase !== "Running") return remove();
  const budgets = state.list(PDBS, ns, (b) => matchesSelector(b.spec?.selector, pod.metadata.labels));
  if (budgets.length > 1)
    throw new KubeStatusError(
      500,
      "InternalError",
      "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );
  const [pdb] = budgets;
  if (!pdb) return remove();
  const s = pdb.status ?? {};
  if (s.observedGeneration !== pdb.metadata.generation || !(s.disruptionsAllowed > 0)) {
    throw new KubeStatusError(
      429,
      "TooManyRequests",
      "Cannot evict pod as it would violate the pod's disruption budget.",
      {
        causes: [
          cause(
            "",
            `The disruption budget ${pdb.metadata.name} needs ${s.desiredHealthy ?? 0} healthy pods and has ${s.currentHealthy ?? 0} currently`,
            "DisruptionBudget",
          ),
        ],
      },
    );
  }
  // Count the disruption now, so a second eviction right after sees it (the controller recomputes later).
  state.updateStatus(PDBS, ns, pdb.metadata.name!, pdb.metadata.uid!, (st) => {
    st.disruptionsAllowed -= 1;
  });
  return remove();
}
