/**
 * Where a controller runs, one object per substrate kind that hosts controllers (Juju's
 * `Environ.Bootstrap` / `DestroyController`): `bootstrap` brings up the first replica until it
 * answers, `destroy` takes away what the kind holds for a controller (its data directory, its
 * install, its instances or VMs). What comes after the first replica answers (log in, store the
 * cloud's credential, make the cloud the replica cloud, record it, grow to the wanted replicas) is
 * the same for every kind and lives once, in ./bootstrap-controller.ts; the CLI's `bootstrap` and
 * `destroy-controller` and the provider's Controller resource both go through it.
 *
 * A client records where each controller it bootstrapped runs (`record`: what it keeps of the
 * settings, never a secret), and later asks the same kind how to destroy it from that record and
 * how to upgrade its replicas in place (./replica-upgrade.ts), naming no kind itself.
 *
 * Each kind's object is loaded on first use (a `require` per kind), so a caller that bootstraps on
 * one kind loads none of the others' clients. What settings each takes is declared in its folder
 * (a cloud's are its models'), and gathered by the registry (registry.ts `HostingSettings`).
 */
import type { ControllerClient, InstanceCloudSubstrate, SpareHost } from "../api/core";
import { StewardError } from "../api/core";
import type { Progress } from "./brokers";
import type { ReplicaUpgrade, ReplicaUpgradeContext } from "./replica-upgrade";

/** One bootstrap, whatever the kind: the CLI's flags and the provider's arguments both map onto it. */
export interface ControllerPlan<Settings> {
  name: string;
  settings: Settings;
  /** The cloud's credential (aws, vsphere): stored in the controller under `name`, for its replica cloud. */
  credential?: { name: string; attributes: Record<string, string> };
  /** Voters to grow to once the first replica answers. */
  replicas: number;
  /** The API port (local: a free one when absent; elsewhere 17070). */
  port?: number;
  replaceAfterSeconds?: number;
  /** How long growing to `replicas` (and, on Kubernetes, the first pod) may take. */
  timeoutMs: number;
  /** local: the admin password to set; with `adopt`, the one of the controller already there. */
  adminPassword?: string;
  /** Take over a controller already there (with `adminPassword`) instead of refusing. */
  adopt?: boolean;
}

export interface HostingOptions {
  progress: Progress;
  signal?: AbortSignal;
  /** The error for a place that holds a controller already (a data directory, a host); the caller words it. */
  existing?(where: string): Error;
}

/** The first replica, answering on its API. */
export interface FirstReplica {
  addresses: string[];
  caCert: string;
  /** Absent: the place held a controller already (`where`), whose password the plan must bring. */
  adminPassword?: string;
  /** What holds it, for messages: a data directory, a host. */
  where: string;
  /** Known when the kind chose it beforehand (instances are marked with it). */
  uuid?: string;
  /** The plan's settings as the kind checked them (defaults filled in), when it did. */
  settings?: unknown;
  /** The credential to store and the replica cloud to set, for a controller that launches its own replicas. */
  credential?: { name: string; substrate: InstanceCloudSubstrate; attributes: Record<string, string> };
  replicaCloud?: Parameters<ControllerClient["setReplicaCloud"]>[0];
  /** The hosts to grow onto (ssh); elsewhere the controller finds its replicas' hosts itself. */
  hosts?: SpareHost[];
  /** The progress line for growing. */
  growing?: string;
  /** A timeout for each API call (remote controllers: short, so a dead address fails over quickly). */
  callTimeoutMs?: number;
  /** How this client reaches the controller once grown (default: the addresses the controller publishes). */
  reachable?(): Promise<string[]>;
  /** Last, once grown (Kubernetes: the seed Secret goes). */
  finish?(): Promise<void>;
}

/** What a client needs to reach a controller a bootstrap made, and where it is (the settings as the kind checked them). */
export interface HostedController<Settings = unknown> {
  uuid: string;
  addresses: string[];
  caCert: string;
  adminPassword: string;
  token: string;
  settings: Settings;
}

/** A controller to destroy: where it is, the UUID its instances are marked with (clouds), and the cloud's credential. */
export interface HostedTarget<Settings> {
  uuid?: string;
  settings: Settings;
  credential?: Record<string, string>;
}

/** `Recorded`: what a client keeps of a controller the kind hosts (the CLI's controllers.json), no secret. */
export interface ControllerHosting<Settings, Recorded = unknown> {
  /** Brings up the first replica and waits until it answers; nothing is left behind when it fails before that. */
  bootstrap(plan: ControllerPlan<Settings>, o: HostingOptions): Promise<FirstReplica>;
  /** Takes away what the kind holds for the controller, once its models are gone; what it removed (ids, names). */
  destroy(target: HostedTarget<Settings>, o: { progress: Progress; signal?: AbortSignal }): Promise<string[]>;
  /** What a client records of the controller `plan` bootstrapped (`c`: as it answered, its settings as checked). */
  record(plan: ControllerPlan<Settings>, c: HostedController<Settings>): Recorded;
  /**
   * The settings `destroy` takes, from what a client recorded; absent: a client cannot destroy the
   * kind's controllers from its record (the hosts' SSH keys are not kept; a StatefulSet's objects go
   * with kubectl or the Pulumi resources that made them).
   */
  destroyable?(recorded: Recorded): Settings;
  /** Opens the in-place upgrade of a controller's replicas (./replica-upgrade.ts); absent: see `replicaUpgradeRefused`. */
  replicaUpgrade?(recorded: Recorded, o: ReplicaUpgradeContext): Promise<ReplicaUpgrade>;
  /** Why the kind's replicas cannot be upgraded in place (kinds without `replicaUpgrade`), for the refusal. */
  replicaUpgradeRefused?: string;
}

/** The error for a place holding a controller already, as the caller words it. */
export function alreadyThere(o: Pick<HostingOptions, "existing">, where: string): Error {
  return o.existing?.(where) ?? new StewardError("conflict", `${where} already holds a controller`);
}
