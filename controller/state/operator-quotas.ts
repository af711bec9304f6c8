/**
 * Operator quotas. Stored operators share one controller-wide quota; without smaller shares, one
 * writer could fill it (deploying with no units pins an operator) and then nobody, admins included,
 * could upload or refresh. So a model's applications may use at most `modelQuotaBytes` of distinct
 * operators, the operators a user uploaded that are still stored take at most `userQuotaBytes` of
 * theirs, and the last `reservedBytes` of the controller's quota are for superusers only.
 * Superusers (and the controller's own imports) are bound by the controller's quota alone.
 */
import { StewardError } from "../../api";
import type { ApplicationDoc, OperatorDoc } from "./documents";

/** Compiled operator quotas, all in bytes; a quota left out does not apply. */
export interface OperatorQuotas {
  /** Most bytes all stored operators may take together. */
  quotaBytes: number;
  /** The part of `quotaBytes` that only superusers' uploads may fill. */
  reservedBytes?: number;
  /** Most bytes of distinct operators one model's applications may use (each counted once). */
  modelQuotaBytes?: number;
  /** Most bytes of stored operators one user uploaded, across every model. */
  userQuotaBytes?: number;
  /** How long an operator no application uses is kept: said in refusals, so users know when space frees. */
  unusedGraceSeconds?: number;
}

/** Who is uploading or deploying; absent for the controller's own writes (imports, migrations). */
export interface OperatorUser {
  user: string;
  superuser: boolean;
}

/** Who deploys or refreshes, and the quotas that bind them. */
export interface OperatorCharge {
  by: OperatorUser;
  quotas: OperatorQuotas;
}

/** Bytes stored operators take, and the part of it `user` uploaded. */
export function operatorUsage(operators: OperatorDoc[], user?: string): { totalBytes: number; userBytes: number } {
  let totalBytes = 0,
    userBytes = 0;
  for (const op of operators) {
    totalBytes += op.bytes;
    if (user !== undefined && op.uploadedBy?.includes(user)) userBytes += op.bytes;
  }
  return { totalBytes, userBytes };
}

/**
 * Why storing `bytes` more of operator content for `by` is refused, if it is. `adds` is false when
 * the content is stored already (it then only becomes the user's too, adding nothing to the controller).
 */
export function uploadRefusal(o: {
  bytes: number;
  adds: boolean;
  usage: { totalBytes: number; userBytes: number };
  quotas: OperatorQuotas;
  by: OperatorUser | undefined;
}): StewardError | undefined {
  const { bytes, usage, quotas, by } = o;
  const freeing = `operators no application uses are deleted ${graceText(quotas)} after their upload or last use`;
  if (by && !by.superuser && quotas.userQuotaBytes !== undefined && usage.userBytes + bytes > quotas.userQuotaBytes) {
    return refusal(
      `the operators user ${by.user} uploaded take ${usage.userBytes} bytes; this one (${bytes} bytes) would go over the user operator quota of ${quotas.userQuotaBytes} bytes (operators.userQuotaBytes): ` +
        `remove the applications that use operators you no longer need (${freeing}), or ask a controller superuser to raise operators.userQuotaBytes in controller.json`,
      {
        quota: "operators.userQuotaBytes",
        quotaBytes: quotas.userQuotaBytes,
        usedBytes: usage.userBytes,
        bytes,
        user: by.user,
      },
    );
  }
  if (!o.adds) return undefined;
  const reserved = Math.min(quotas.reservedBytes ?? 0, quotas.quotaBytes);
  if (by && !by.superuser && reserved > 0 && usage.totalBytes + bytes > quotas.quotaBytes - reserved) {
    const open = quotas.quotaBytes - reserved;
    return refusal(
      `the operators stored on this controller take ${usage.totalBytes} bytes; this one (${bytes} bytes) would go over the ${open} bytes open to users who are not superusers ` +
        `(operators.quotaBytes ${quotas.quotaBytes} less operators.reservedBytes ${reserved}, kept for superusers): ${freeing}; ` +
        "ask a controller superuser to remove applications no longer needed or to raise operators.quotaBytes in controller.json",
      {
        quota: "operators.reservedBytes",
        quotaBytes: open,
        usedBytes: usage.totalBytes,
        bytes,
        reservedBytes: reserved,
      },
    );
  }
  if (usage.totalBytes + bytes > quotas.quotaBytes) {
    return refusal(
      `this operator (${bytes} bytes) would take the operators stored on this controller to ${usage.totalBytes + bytes} bytes, over the operator quota of ${quotas.quotaBytes} bytes; ` +
        "operators no application uses are deleted after a grace period, or raise operators.quotaBytes in controller.json",
      { quota: "operators.quotaBytes", quotaBytes: quotas.quotaBytes, usedBytes: usage.totalBytes, bytes },
    );
  }
  return undefined;
}

/** Bytes of the distinct operators `apps` use (an operator several applications use counts once). */
export function modelOperatorBytes(
  apps: { operator: Pick<ApplicationDoc["operator"], "hash"> }[],
  sizes: ReadonlyMap<string, number>,
): number {
  let sum = 0;
  for (const hash of new Set(apps.map((a) => a.operator.hash))) sum += sizes.get(hash) ?? 0;
  return sum;
}

/**
 * Why a deploy or refresh that takes model `model` from `beforeBytes` to `afterBytes` of operators is
 * refused, if it is. A change that does not grow the model's use is never refused.
 */
export function modelUseRefusal(o: {
  model: string;
  beforeBytes: number;
  afterBytes: number;
  bytes: number;
  quotas: OperatorQuotas | undefined;
  by: OperatorUser | undefined;
}): StewardError | undefined {
  const quota = o.quotas?.modelQuotaBytes;
  if (quota === undefined || !o.by || o.by.superuser || o.afterBytes <= o.beforeBytes || o.afterBytes <= quota)
    return undefined;
  return refusal(
    `model ${o.model} uses ${o.beforeBytes} bytes of operators (each counted once however many applications use it); this one (${o.bytes} bytes) would take it to ${o.afterBytes} bytes, ` +
      `over the model operator quota of ${quota} bytes (operators.modelQuotaBytes): remove applications this model no longer needs, or ask a controller superuser to raise operators.modelQuotaBytes in controller.json`,
    { quota: "operators.modelQuotaBytes", quotaBytes: quota, usedBytes: o.beforeBytes, bytes: o.bytes, model: o.model },
  );
}

function refusal(message: string, details: Record<string, unknown>): StewardError {
  return new StewardError("quota-exceeded", message, { reason: "operator-quota", details });
}

function graceText(quotas: OperatorQuotas): string {
  const s = quotas.unusedGraceSeconds;
  if (s === undefined) return "a grace period";
  return s % 3600 === 0 ? `${s / 3600} h` : s % 60 === 0 ? `${s / 60} min` : `${s} s`;
}
