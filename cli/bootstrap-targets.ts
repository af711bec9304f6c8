/**
 * What `steward bootstrap` knows of its targets (this host, `ssh:`, `aws:`, `vsphere:`,
 * `kubernetes:`), in one place: which flags belong to which target (a flag given for another target
 * is refused, naming its owner), how messages name each cloud's things, and how a target's words
 * read. The bootstrap itself is the substrates' flow (../substrates/bootstrap-controller.ts).
 */
import { UsageError } from "clipanion";
import type { ModelSubstrate } from "../api/core";
import { SUBSTRATE_CONTRACTS } from "../api/core";

export type TargetKind = "local" | "ssh" | "aws" | "vsphere" | "kubernetes";

export function targetKind(first: string | undefined): TargetKind {
  if (first?.startsWith("kubernetes:") || first?.startsWith("k8s:")) return "kubernetes";
  if (first?.startsWith("aws:")) return "aws";
  if (first?.startsWith("vsphere:")) return "vsphere";
  if (first?.startsWith("ssh:")) return "ssh";
  return "local";
}

/**
 * Each group's flags, by the command's property that holds each, and the target(s) they are for. A kind's
 * group names the flags its contract lists (api/substrate-kinds.ts), which {@link kindsWithDriftedFlags} checks.
 */
export const FLAG_GROUPS = {
  kubernetes: {
    owner: "kubernetes:CONTEXT",
    flags: {
      "--kubeconfig": "kubeconfig",
      "--namespace": "namespace",
      "--controller-image": "controllerImage",
      "--agent-image": "agentImage",
      "--api-address": "apiAddress",
    },
  },
  aws: {
    owner: "aws:REGION",
    flags: {
      "--region": "region",
      "--image": "image",
      "--instance-type": "instanceType",
      "--subnet": "subnets",
      "--security-group": "securityGroups",
      "--endpoint": "endpoint",
      "--endpoint-ca-file": "endpointCa",
    },
  },
  vsphere: {
    owner: "vsphere:VCENTER",
    flags: {
      "--vcenter": "vcenter",
      "--datacenter": "datacenter",
      "--template": "template",
      "--folder": "folder",
      "--resource-pool": "resourcePool",
      "--vcenter-ca-file": "vcenterCa",
    },
  },
  cloud: {
    owner: "aws:REGION and vsphere:VCENTER",
    flags: {
      "--replicas": "replicas",
      "--credential-file": "credentialFile",
      "--from-env": "fromEnv",
      "--credential": "credentialName",
    },
  },
  ssh: {
    owner: "ssh: targets",
    flags: { "--host-key": "hostKey", "--trust-on-first-use": "tofu", "--key-file": "keyFile", "--key-env": "keyEnv" },
  },
} as const;
export type FlagGroup = keyof typeof FLAG_GROUPS;

/** The groups refused up front, in the order they are checked, with the targets that take them (kubernetes words its own refusal of the cloud flags). */
export const REFUSED_ELSEWHERE: readonly (readonly [FlagGroup, readonly TargetKind[]])[] = [
  ["kubernetes", ["kubernetes"]],
  ["aws", ["aws"]],
  ["vsphere", ["vsphere"]],
  ["cloud", ["aws", "vsphere", "kubernetes"]],
];

/** What kubernetes: refuses: the credential comes from the kubeconfig, the keys and the port are the cluster's. */
export const KUBERNETES_REFUSED =
  "--credential-file, --from-env, --credential, --host-key, --key-file, --key-env and --port";

/** How messages name each cloud's things: the kind's own words (api/substrate-kinds.ts). */
function cloudWords(kind: "aws" | "vsphere"): { cloud: string; instance: string; instances: string; env: string } {
  const { words } = SUBSTRATE_CONTRACTS[kind];
  return { cloud: words.cloud, instance: words.thing, instances: words.things, env: words.env ?? "" };
}
export const CLOUD_WORDS = { aws: cloudWords("aws"), vsphere: cloudWords("vsphere") };

/** The kinds whose flag group differs from the flags their contract lists (none, unless one of the two drifted). */
export function kindsWithDriftedFlags(): ModelSubstrate[] {
  return (["kubernetes", "aws", "vsphere"] as const).filter(
    (k) => Object.keys(FLAG_GROUPS[k].flags).join() !== SUBSTRATE_CONTRACTS[k].flags.join(),
  );
}

/** "--a, --b and --c are for OWNER". */
export function refusal(group: FlagGroup): string {
  const flags = Object.keys(FLAG_GROUPS[group].flags);
  return `${flags.slice(0, -1).join(", ")} and ${flags[flags.length - 1]} are for ${FLAG_GROUPS[group].owner}`;
}

/** Whether the command was given any flag of the group (a value, a non-empty list, a true switch). */
export function flagsGiven(command: object, group: FlagGroup): boolean {
  return Object.values(FLAG_GROUPS[group].flags).some((property) => {
    const v = (command as Record<string, unknown>)[property];
    return v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0);
  });
}

/** `aws:eu-west-1` → `eu-west-1`; the flag, when given too, must agree. */
export function regionOf(target: string, flag: string | undefined): string {
  const region = target.slice("aws:".length);
  if (!region && !flag) throw new UsageError("give the region: aws:eu-west-1");
  if (region && flag && region !== flag)
    throw new UsageError(`the region is given twice and differs: ${target} and --region ${flag}`);
  return region || flag!;
}

/**
 * `vsphere:vcenter.example.com` (or `…/sdk`) → `https://vcenter.example.com/sdk` (a full `https://…` URL is
 * taken as it is); `--vcenter`, when given too, must agree.
 */
export function vcenterOf(target: string, flag: string | undefined): string {
  const given = target.slice("vsphere:".length);
  if (!given && !flag)
    throw new UsageError("give vCenter: vsphere:vcenter.example.com (or vsphere:https://vcenter.example.com/sdk)");
  const url = !given
    ? flag!
    : /^[a-z]+:\/\//i.test(given)
      ? given
      : `https://${given.replace(/\/+$/, "").replace(/\/sdk$/, "")}/sdk`;
  if (given && flag && url !== flag)
    throw new UsageError(`vCenter is given twice and differs: ${target} (${url}) and --vcenter ${flag}`);
  return url;
}
