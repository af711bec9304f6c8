/**
 * The cleaner moves dying things along once what they wait for is gone: a dying integration is
 * deleted once every unit has left it; a dying model's machines
 * retire when its units are gone, the model is deleted when its machines are; manual machines
 * (whose agents we do not own) are deleted as soon as they are dying. Operators no application
 * uses are collected too (see operator-collector.ts), also on a timer since they age unchanged.
 */
import type { Logger } from "../api";
import { contractOf } from "../api";
import type { OperatorCollectorOptions } from "./operator-collector";
import { OperatorCollector } from "./operator-collector";
import type { RelationOps, StateCache, StateOps } from "./state";
import { Reconciler } from "./workers";

/** The longest an expired operator waits for the collector's timer. */
const MAX_COLLECT_INTERVAL_MS = 60_000;

/** Runs on every change of the cache (no signature: any change may let something go). */
export class Cleaner extends Reconciler {
  readonly name = "cleaner";
  private readonly operators: OperatorCollector;
  /** Collecting operators reads the store: done on its timer, not on every change. */
  private collectDue = true;

  constructor(
    private readonly cache: StateCache,
    private readonly ops: StateOps,
    private readonly relations: RelationOps,
    private readonly log: Logger,
    operators: OperatorCollectorOptions,
  ) {
    super({
      cache,
      log,
      failure: "cleanup pass failed; will retry on the next change",
      failureLevel: "warn",
      pollMs: Math.min(MAX_COLLECT_INTERVAL_MS, Math.max(1000, operators.graceMs / 2)),
    });
    this.operators = new OperatorCollector(cache, ops, log, operators);
  }

  protected override polled(): void {
    this.collectDue = true;
  }

  protected async reconcile(): Promise<void> {
    await this.sweepModels();
    if (!this.collectDue) return;
    this.collectDue = false;
    await this.operators.collect();
  }

  private async sweepModels(): Promise<void> {
    for (const idx of [...this.cache.models.values()]) {
      for (const m of [...idx.machines.values()]) {
        if (m.life !== "dying") continue;
        // Agents we do not own go at once; an SSH machine whose agent never came up has nobody to uninstall it.
        const neverUp =
          contractOf(m.substrate).addMachines === "address" &&
          !idx.presence.has(m.id) &&
          !idx.machineInfo.has(m.id) &&
          idx.machineInstall.get(m.id)?.state !== "installing";
        if (contractOf(m.substrate).agentsStartedByHand || neverUp) await this.ops.machines.finish(idx.uuid, m.id);
      }
      for (const r of [...idx.relations.values()]) {
        if (r.life === "dying" && !idx.scope.has(r.id)) await this.relations.finishRelation(idx.uuid, r.id);
      }
      for (const a of [...idx.apps.values()]) {
        if (a.life === "dying" && ![...idx.units.values()].some((u) => u.app === a.name))
          await this.ops.applications.remove(idx.uuid, a.name, true);
      }
      if (idx.model?.life !== "dying") continue;
      if (idx.units.size === 0 && [...idx.machines.values()].some((m) => m.life === "alive"))
        await this.ops.machines.retire(idx.uuid);
      if (
        idx.units.size === 0 &&
        idx.apps.size === 0 &&
        idx.machines.size === 0 &&
        idx.relations.size === 0 &&
        (await this.ops.models.finish(idx.uuid))
      ) {
        this.log.info("model destroyed", { model: idx.model.name });
      }
    }
  }
}
