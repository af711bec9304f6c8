/**
 * `steward bootstrap aws:REGION` and `vsphere:VCENTER`: the first replica as the substrate's
 * bootstrap installs it (an instance or VM with a host key made for it, the controller over SSH
 * with that key pinned, the cloud as the replica cloud), then growth to `--replicas` by the
 * controller itself (enable-ha launches the other replicas on the same cloud).
 */
import { UsageError } from "clipanion";
import type { AwsModelSettings, VsphereModelSettings } from "../api/core";
import { ControllerClient, waitForVoters } from "../api/core";
import type * as Api from "../api";
import type * as Substrates from "../substrates";
import type { ControllerEntry } from "./client-config";

/** Where the first replica goes: a cloud and its settings, as the flags gave them (checked here). */
export type CloudPlacement = { substrate: "aws"; settings: Partial<AwsModelSettings> } | { substrate: "vsphere"; settings: VsphereModelSettings };

export interface CloudBootstrapPlan {
  name: string;
  cloud: CloudPlacement;
  /** The credential's attributes (aws: access-key-id, …; vsphere: user, password). */
  attributes: Record<string, string>;
  /** The name it is stored under in the controller. */
  credentialName: string;
  replicas: number;
  port: number;
  replaceAfterSeconds?: number;
  /** How long growing to `replicas` may take. */
  timeoutMs: number;
  progress(line: string): void;
}

/** Checks the plan as the controller would (so nothing is launched on bad input), then bootstraps. Returns the client entry. */
export async function bootstrapOnCloud(plan: CloudBootstrapPlan): Promise<ControllerEntry> {
  // Loaded here: the schemas and the clouds' clients are heavy and only bootstrap needs them.
  const api = require("../api") as typeof Api;
  const { aws, vsphere } = require("../substrates") as typeof Substrates;
  const substrate = plan.cloud.substrate;
  api.parseRequest(api.CredentialRequest, { substrate, attributes: plan.attributes }, `${substrate} credential`);
  const common = { name: plan.name, attributes: plan.attributes, credentialName: plan.credentialName, port: plan.port, progress: plan.progress };
  let c: Substrates.CloudController;
  let placement: Pick<ControllerEntry, "aws" | "vsphere">;
  if (plan.cloud.substrate === "aws") {
    const settings = api.parseRequest(api.AwsModelSettingsSchema, plan.cloud.settings, "aws settings");
    c = await aws.bootstrapControllerOnAws({ ...common, settings });
    placement = { aws: { settings, uuid: c.uuid } };
  } else {
    const settings = api.parseRequest(api.VsphereModelSettingsSchema, plan.cloud.settings, "vsphere settings");
    c = await vsphere.bootstrapControllerOnVsphere({ ...common, settings });
    placement = { vsphere: { settings, uuid: c.uuid } };
  }
  const client = new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: "admin", password: c.adminPassword, timeoutMs: 3000 });
  try {
    const token = await client.login();
    const entry: ControllerEntry = { addresses: c.addresses, caCert: c.caCert, user: "admin", password: c.adminPassword, generatedPassword: true, token, ...placement };
    if (plan.replicas > 1) {
      plan.progress(`Growing to ${plan.replicas} replicas: the controller launches the others on ${substrate}`);
      await client.enableHa({ replicas: plan.replicas, ...(plan.replaceAfterSeconds ? { replaceAfterSeconds: plan.replaceAfterSeconds } : {}) });
      await waitForVoters(client, plan.replicas, plan.timeoutMs, plan.progress);
      entry.addresses = (await client.controllerInfo()).addresses;
    }
    return entry;
  } finally {
    client.close();
  }
}

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
