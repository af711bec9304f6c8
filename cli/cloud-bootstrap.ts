/**
 * `steward bootstrap aws:REGION` and `vsphere:VCENTER`: the target's words read as the flags do
 * (the bootstrap itself is the substrates' flow: ../substrates/bootstrap-controller.ts).
 */
import { UsageError } from "clipanion";

/** `aws:eu-west-1` → `eu-west-1`; the flag, when given too, must agree. */
export function regionOf(target: string, flag: string | undefined): string {
  const region = target.slice("aws:".length);
  if (!region && !flag) throw new UsageError("give the region: aws:eu-west-1");
  if (region && flag && region !== flag) throw new UsageError(`the region is given twice and differs: ${target} and --region ${flag}`);
  return region || flag!;
}

/**
 * `vsphere:vcenter.example.com` (or `…/sdk`) → `https://vcenter.example.com/sdk` (a full `https://…` URL is
 * taken as it is); `--vcenter`, when given too, must agree.
 */
export function vcenterOf(target: string, flag: string | undefined): string {
  const given = target.slice("vsphere:".length);
  if (!given && !flag) throw new UsageError("give vCenter: vsphere:vcenter.example.com (or vsphere:https://vcenter.example.com/sdk)");
  const url = !given ? flag! : /^[a-z]+:\/\//i.test(given) ? given : `https://${given.replace(/\/+$/, "").replace(/\/sdk$/, "")}/sdk`;
  if (given && flag && url !== flag) throw new UsageError(`vCenter is given twice and differs: ${target} (${url}) and --vcenter ${flag}`);
  return url;
}
