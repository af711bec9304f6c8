/**
 * The seam every substrate implements, in the spirit of Juju's `environs.InstanceBroker`
 * (StartInstance / StopInstances), typed and cancellable. The controller's provisioner decides
 * *which* machines should exist (from the model); a broker only makes one exist or go away.
 */

import type { AgentConfig, Constraints } from "../api/core";

/** Progress of a long step (an upload, a boot), for the machine's status. */
export type Progress = (step: string) => void;

export interface MachineRef {
  /** The model's uuid. */
  model: string;
  machine: string;
}

/** A machine on the substrate: `placement` says where (an SSH host; a cloud's region, settings and credential; nothing for local). */
export interface MachineTarget<Placement = undefined> extends MachineRef {
  placement: Placement;
}

/** A machine to bring up. */
export interface MachineSpec<Placement = undefined> extends MachineTarget<Placement> {
  /** Where its agent finds the controller. */
  controller: { addresses: string[]; caCert: string };
  /** Issues the machine's credential; asked only when the agent needs a new configuration (a new credential ends the old). */
  issueCredential(): Promise<string>;
  /** Issues a one-time enrolment token (cloud machines, which enrol themselves: cloud-init.ts). */
  issueEnrolment?(): Promise<string>;
  /** Resolves once the agent has logged in; a broker that installs waits for it, so a broken install is reported as one. */
  waitForLogin?(): Promise<void>;
  /** What the machine must at least have (a cloud sizes its instance or VM by them; one that cannot honour them says so before it makes anything). */
  constraints?: Constraints;
}

/** The agent configuration a broker writes for `spec`, with the credential it was issued. */
export function agentConfigOf(spec: MachineSpec<unknown>, credential: string): AgentConfig {
  return {
    model: spec.model,
    machine: spec.machine,
    credential,
    controllerAddresses: spec.controller.addresses,
    caCert: spec.controller.caCert,
  };
}

export interface StartedMachine {
  /** What the substrate calls it: a pid, an instance id, a host. */
  instanceId: string;
  /** False when it was already running as asked and nothing changed. */
  changed: boolean;
  /** Bytes sent to the host (installs over SSH), for the machine's status. */
  bytesUploaded?: number;
  /** What the machine has, where the substrate knows (a cloud's instance type or VM size). */
  hardware?: Constraints;
}

/** Machines for a model's units. */
export interface MachineBroker<Placement = undefined> {
  /** Makes the machine's agent run (idempotent: one already running as asked is left alone). */
  startMachine(
    spec: MachineSpec<Placement>,
    opts?: { progress?: Progress; signal?: AbortSignal },
  ): Promise<StartedMachine>;
  /** Stops the machine's agent and removes what the substrate made for it; a machine already gone is fine. */
  stopMachine(target: MachineTarget<Placement>, opts?: { signal?: AbortSignal }): Promise<void>;
}

/** A host acquired for a controller replica. */
export interface ReplicaHost {
  /** Where its etcd member and API are reached. */
  address: string;
  /** A cloud host: its instance (recorded with the replica, shown by show-controller); a pod: its claim. */
  instance?: { id: string; zone?: string };
}

/**
 * Hosts for the controller's own replicas: the quorum keeper asks for one when a lost replica is
 * replaced (the spare pool hands over a registered host; a cloud launches an instance).
 */
export interface ReplicaHostBroker<H extends ReplicaHost = ReplicaHost> {
  /** Why no host can be had now (the keeper reports it), or undefined when one can. */
  unavailable(): string | undefined;
  /**
   * A host with a replica staged on it (nothing started yet); `nameFor` names the replica from its
   * address, or takes the broker's `preferred` name (a pod's: `<pod>-<4 hex>`).
   */
  acquire(
    nameFor: (address: string, preferred?: string) => string,
    progress: Progress,
    signal?: AbortSignal,
  ): Promise<H>;
  /** Starts the staged replica `name`, joining `initialCluster` (etcd's `name=peer-url,…`). */
  start(host: H, name: string, initialCluster: string, progress: Progress): Promise<void>;
  /** The replica on the host at `address` has a vote: the host is the cluster's now (a spare leaves the pool). */
  joined(address: string): Promise<void>;
  /** Installing on `host` failed: it is set aside (a spare is marked failed; an instance is terminated). */
  failed(host: H, why: string): Promise<void>;
  /** `host` was acquired but not used (the cluster could not take a member then): a spare stays in the pool, an instance is terminated. */
  release(host: H): Promise<void>;
  /**
   * `host` was acquired by a leader deposed before it used it: undo only what no other leader can know
   * of or be using (an instance launched for it; not a spare, which the next leader may have taken).
   */
  abandon?(host: H): Promise<void>;
  /** The replica at `address` is out of the etcd cluster for good: a cloud terminates its instance. */
  retire?(address: string): Promise<void>;
  /**
   * Whether a replica (its host, the instance it was recorded with, when it was added) is known lost
   * for good: a pod made again on a new, empty claim. The keeper then replaces it without waiting `replaceAfter`.
   */
  lost?(replica: { host: string; instance?: { id: string }; addedAt: string }): Promise<boolean>;
}
