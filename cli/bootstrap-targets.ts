/**
 * What `steward bootstrap` knows of its targets beyond each kind's own flags and target word (those
 * are in the kinds' contracts, read through ./kind-flags.ts): which kind a target names, the flag
 * groups that are not one kind's (the cloud credential, the SSH host keys), and which targets take
 * them (a flag given for another target is refused, naming its owner). The bootstrap itself is the
 * substrates' flow (../substrates/bootstrap-controller.ts).
 */
import type { ModelSubstrate, SubstrateContract } from "../api/core";
import { contractOf, listed, substratesWhere } from "../api/core";
import type { KindFlags } from "./kind-flags";
import { kindOfTarget, targetName } from "./kind-flags";

/** The kind `first` names as a bootstrap target (`aws:eu-west-1`), else the kind on this host (a controller name, or nothing). */
export function targetKind(first: string | undefined): ModelSubstrate {
  return kindOfTarget(first)?.name ?? substratesWhere((k) => k.onControllerHost === true)[0]!;
}

/** The targets of the kinds that launch their replicas as instances with a stored credential: "aws:REGION and vsphere:VCENTER". */
const instanceClouds = (): string =>
  listed(substratesWhere((k) => k.replicaHosts === "instances").map((k) => targetName(contractOf(k))));

/** The kinds whose cloud credential the cloud group's flags give (they launch instances with it): "aws, vsphere". */
export const cloudKinds = (): string => substratesWhere((k) => k.replicaHosts === "instances").join(", ");

/** Where `--from-env` reads each of them: "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or VSPHERE_USER, VSPHERE_PASSWORD". */
export const cloudCredentialEnv = (): string =>
  substratesWhere((k) => k.replicaHosts === "instances")
    .map((k) => {
      const { env = {}, required = [], optional = [] } = contractOf(k).credential ?? {};
      const named = (attrs: readonly string[]) => attrs.flatMap((a) => (env[a] ? [env[a]] : []));
      const more = named(optional);
      return `${named(required).join(", ")}${more.length ? ` (and ${more.join(", ")})` : ""}`;
    })
    .join(", or ");

/** The flag groups that are not one kind's, by the command's property that holds each flag, and the targets they are for. */
export const FLAG_GROUPS = {
  cloud: {
    owner: instanceClouds(),
    flags: {
      "--replicas": "replicas",
      "--credential-file": "credentialFile",
      "--from-env": "fromEnv",
      "--credential": "credentialName",
    },
  },
  sshKeys: {
    owner: "ssh: targets",
    flags: { "--host-key": "hostKey", "--trust-on-first-use": "tofu", "--key-file": "keyFile", "--key-env": "keyEnv" },
  },
} as const;
export type FlagGroup = keyof typeof FLAG_GROUPS;

/** What a kind whose replicas are its own pods refuses: the credential comes from the kubeconfig, the keys and the port are the cluster's. */
export const OWN_PODS_REFUSED =
  "--credential-file, --from-env, --credential, --host-key, --key-file, --key-env and --port";

/**
 * Why the flags given do not go with a bootstrap on `kind`: another kind's ("--region … are for
 * aws:REGION"), or the cloud group on a kind that hosts no replicas itself; undefined when they do.
 */
export function refusedFlags(kind: SubstrateContract<any>, command: object, flags: KindFlags): string | undefined {
  const foreign = flags.foreignProblem(kind.name, targetName);
  if (foreign) return foreign;
  if (kind.replicaHosts === undefined && flagsGiven(command, "cloud")) return refusal("cloud");
  return undefined;
}

/** "--a, --b and --c are for OWNER". */
export function refusal(group: FlagGroup): string {
  return `${listed(Object.keys(FLAG_GROUPS[group].flags))} are for ${FLAG_GROUPS[group].owner}`;
}

/** Whether the command was given any flag of the group (a value, a non-empty list, a true switch). */
export function flagsGiven(command: object, group: FlagGroup): boolean {
  return Object.values(FLAG_GROUPS[group].flags).some((property) => {
    const v = (command as Record<string, unknown>)[property];
    return v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0);
  });
}

/** The bootstrap's first argument as help names it: `ssh:user@host|aws:region|…|name`, each kind's target in turn. */
export function targetArgumentName(): string {
  const targets = substratesWhere((k) => k.cli?.target !== undefined).map((k) =>
    targetName(contractOf(k)).toLowerCase(),
  );
  return [...targets, "name"].join("|");
}
