/**
 * `steward bootstrap aws:REGION`: the first replica as substrates/aws/bootstrap.ts installs it (an
 * instance with a host key made for it, the controller over SSH with that key pinned, EC2 as the
 * replica cloud), then growth to `--replicas` by the controller itself (enable-ha launches the
 * other replicas on EC2).
 */
import { UsageError } from "clipanion";
import type { AwsModelSettings } from "../api/core";
import { ControllerClient, waitForVoters } from "../api/core";
import type * as Api from "../api";
import type * as Substrates from "../substrates";
import type { ControllerEntry } from "./client-config";

export interface AwsBootstrapPlan {
  name: string;
  settings: Partial<AwsModelSettings>;
  /** The credential's attributes (access-key-id, secret-access-key, session-token). */
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
export async function bootstrapOnAws(plan: AwsBootstrapPlan): Promise<ControllerEntry> {
  // Loaded here: the schemas and the AWS SDK are heavy and only bootstrap needs them.
  const api = require("../api") as typeof Api;
  const { aws } = require("../substrates") as typeof Substrates;
  const settings = api.parseRequest(api.AwsModelSettingsSchema, plan.settings, "aws settings");
  api.parseRequest(api.CredentialRequest, { substrate: "aws", attributes: plan.attributes }, "aws credential");
  const c = await aws.bootstrapControllerOnAws({ name: plan.name, settings, attributes: plan.attributes, credentialName: plan.credentialName, port: plan.port, progress: plan.progress });
  const client = new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: "admin", password: c.adminPassword, timeoutMs: 3000 });
  try {
    const token = await client.login();
    const entry: ControllerEntry = { addresses: c.addresses, caCert: c.caCert, user: "admin", password: c.adminPassword, generatedPassword: true, token, aws: { settings, uuid: c.uuid } };
    if (plan.replicas > 1) {
      plan.progress(`Growing to ${plan.replicas} replicas: the controller launches the others on EC2`);
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
