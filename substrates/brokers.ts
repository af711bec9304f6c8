/**
 * The seams every substrate implements, in the spirit of Juju's `environs.InstanceBroker`
 * (StartInstance / StopInstances) and its CAAS broker, typed and cancellable. The controller's
 * provisioners decide *which* machines or unit pods should exist (from the model); a broker only
 * makes them exist or go away: one machine at a time, or an application's pods at once.
 */

import type { AgentConfig, Constraints, WorkloadContainer } from "../api/core";

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
  /**
   * The handles (../volumes.ts) of kept storage instances to be attached to it: a cloud places it
   * where they can be attached (an EBS volume's zone).
   */
  storageHandles?: readonly Record<string, string>[];
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
  /**
   * The replica is out of the etcd cluster for good: a cloud terminates the instance it was recorded
   * with. True once nothing of it runs (none recorded, or the cloud says it is gone); false while its
   * termination is not yet seen, so the keeper asks again on a later pass.
   */
  retire?(replica: RetiredReplica): Promise<boolean>;
  /**
   * Whether a replica (its host, the instance it was recorded with, when it was added) is known lost
   * for good: a pod made again on a new, empty claim. The keeper then replaces it without waiting `replaceAfter`.
   */
  lost?(replica: { host: string; instance?: { id: string }; addedAt: string }): Promise<boolean>;
}

/** A replica removed for good, as the keeper recorded it: its host and the cloud instance it ran on. */
export interface RetiredReplica {
  host: string;
  instance?: { id: string };
}

/** How often the kubelet probes a unit pod's container, how long it waits, and after how many failures it acts (per probe kind). */
export interface PodProbeSettings {
  liveness: { periodSeconds: number; timeoutSeconds: number; failureThreshold: number };
  readiness: { periodSeconds: number; timeoutSeconds: number; failureThreshold: number };
  startup: { periodSeconds: number; timeoutSeconds: number; failureThreshold: number };
}

/** What every unit pod a pod broker makes runs: the agent's image, and its container's probes. */
export interface UnitPodSettings {
  agentImage: string;
  /** Absent: the kind's defaults. */
  probes?: PodProbeSettings;
}

/** A model's pods on the substrate: `placement` says where (a cluster and its namespace). */
export interface PodTarget<Placement> {
  /** The model's uuid. */
  model: string;
  placement: Placement;
}

/** An application's unit pods to have: unit N is pod N, and pods 0 … `replicas - 1` exist. */
export interface ApplicationPods<Placement> extends PodTarget<Placement> {
  app: string;
  /** 1 + the highest unit number still in the model, dying units included (0: none). */
  replicas: number;
  /** The operator's workload containers, run beside the agent (none when absent). */
  containers?: Record<string, WorkloadContainer>;
  /** The stores each unit has (operator.yaml `storage:`), mounted in each unit's pod (none when absent). */
  storage?: PodStorage[];
  /**
   * The units' agent configurations by unit number, given those the substrate holds for the
   * application now (empty when none); asked only while it has units, and written before the pods
   * that read them when they differ from those held.
   */
  agentConfigs(held: ReadonlyMap<number, string>): Promise<ReadonlyMap<number, string>>;
}

/** A store every unit of an application has, as its pod mounts it (issue 32). */
export interface PodStorage {
  /** The store's name in operator.yaml (`data`). */
  name: string;
  /** Instances each unit has. */
  count: number;
  /** MiB, each. */
  size: number;
  /** Where the operator wants it (absent: the substrate's default place). */
  location?: string;
  /** Whether a unit may have more than one instance (each then goes under `location`, by its place in the unit). */
  multiple: boolean;
  /** The pool's attributes (kubernetes: `storage-class`). */
  attributes: Record<string, string>;
}

/** What {@link ApplicationBroker.ensureApplication} changed of the pods' owner (a StatefulSet). */
export type ApplicationPodsChange =
  { change: "none" | "made" | "template" } | { change: "scaled"; from: number | undefined };

/** What {@link ApplicationBroker.removeModel} removed. */
export type ModelPodsRemoval =
  { removed: "space" } | { removed: "applications"; applications: string[] } | { removed: "nothing" };

/** A unit's pod as the substrate shows it, or the one it waits for. */
export interface UnitPod {
  /** What the substrate calls it (`namespace/pod`). */
  id: string;
  /** Its phase in words (`running, ready`, `pending`, `terminating`). */
  state: string;
  address?: string;
  /** False while the pod is not there at all. */
  exists: boolean;
  /** Its containers run (the unit's machine is installed). */
  running: boolean;
}

/**
 * Pods for a model's applications (a substrate whose units are pods: Juju's CAAS broker): the
 * controller's pod provisioner decides which units should exist; the broker makes each
 * application's pods match, lists what the model has, and removes what is gone. Every call takes
 * the caller's signal, and each object is written whole (or patched to its wanted form), so a pass
 * cut short is finished by the next. Made by the kind's `pods()`; the caller closes it.
 */
export interface ApplicationBroker<Placement> {
  /** Makes the model's own space on the substrate (a namespace) exist; true when it was made now. */
  ensureModel(target: PodTarget<Placement>, opts?: { signal?: AbortSignal }): Promise<boolean>;
  /** Makes the application's agent configurations, services and pods what `spec` says. */
  ensureApplication(spec: ApplicationPods<Placement>, opts?: { signal?: AbortSignal }): Promise<ApplicationPodsChange>;
  /** The applications the model has pods (or their owner) for on the substrate. */
  applications(target: PodTarget<Placement>, opts?: { signal?: AbortSignal }): Promise<string[]>;
  /** The pods of `units` (by application and number), in their order: those not there are what is waited for. */
  unitPods(
    target: PodTarget<Placement>,
    units: readonly { app: string; unit: number }[],
    opts?: { signal?: AbortSignal },
  ): Promise<UnitPod[]>;
  /** Removes an application's pods and everything made for them; what is already gone is fine. */
  removeApplication(target: PodTarget<Placement>, app: string, opts?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Removes a removed model's pods: its whole space when it was made for the model, else each of
   * its applications' objects in it (a space it shares); a space already gone is fine.
   */
  removeModel(target: PodTarget<Placement>, opts?: { signal?: AbortSignal }): Promise<ModelPodsRemoval>;
  /** Where `placement` leads, for messages: the cluster's address and the model's namespace in it. */
  where(placement: Placement): { server: string; namespace: string };
  /** A failed call in words a user can act on (`cannot reach cluster https://…: connection refused`). */
  describeFailure(err: unknown, placement: Placement): string;
  /** Closes what was opened for `placement` (its client); the next call opens it again. */
  release(placement: Placement): void;
  close(): void;
}
