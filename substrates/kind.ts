/**
 * The runtime half of a substrate kind (Juju's `Environ`, opened from its `EnvironProvider`): how a
 * model's settings and credential become a placement, the broker that makes its machines (with its
 * instances listed) or its applications' pods, the checks it makes of a credential or a placement against the real cloud,
 * the hosts it gives the controller for its own replicas (./replica-hosts.ts), and how it hosts
 * controllers (bootstrap, destroy). Each `substrates/<kind>/kind.ts` exports one, found through the
 * lazy registry (registry.ts); its static half, the contract, is `api/substrate-kinds.ts`.
 */
import type { Constraints, SubstrateContract } from "../api/core";
import type { ApplicationBroker, MachineBroker, UnitPodSettings } from "./brokers";
import type { ControllerHosting } from "./controller-hosting";
import type { ReplicaHostDeps, ReplicaHostsOfKind } from "./replica-hosts";
import type { VolumeBroker, VolumeDeps } from "./volumes";

/** A stored credential's attributes, opened (unsealed). */
export type Attributes = Record<string, string>;

/** An instance (EC2 instance, vSphere VM) as the provisioner records it. */
export interface CloudInstance {
  id: string;
  machine?: string;
  state: string;
  zone?: string;
  address?: string;
}

/**
 * Where the processes a kind starts on the controller's own host go (kinds whose contract says
 * `onControllerHost`): the controller hands it to every kind's `machines()`, and the others ignore it.
 */
export interface MachineHost {
  /** Root of the machines' directories: `<root>/<model-uuid>/<machine-id>/`. */
  machinesDir: string;
  /** The agent's entry script. */
  agentEntry: string;
  /**
   * Who agents run as when the controller runs as root, and where their directories go then
   * (`machinesDir`, in `dataDir`, becomes a link there). Unused when not root: agents run as the controller.
   */
  agents: {
    user: string;
    dir: string;
    dataDir: string;
    /** Run them as the controller's user even as root. */
    asController: boolean;
  };
}

/**
 * A kind's machines, as its `machines()` makes them: started and stopped (./brokers.ts), and, as its
 * contract says, listed (`instances`: a cloud's) or checked before they are recorded (`addMachines:
 * "address"`: a host). The caller closes it.
 */
export interface MachinesOfKind<Placement> extends MachineBroker<Placement> {
  /** Checks the host at `placement` before its machine is recorded (reachable, its key, its OS); what identifies it (an SSH host key). */
  admit?(placement: Placement, o: { attempts: number }): Promise<string>;
  /** The model's instances, newest first (kinds whose contract says `instances`). */
  instances?(p: Placement, model: string): Promise<CloudInstance[]>;
  /** The instance no longer is (or soon will not be) the machine (kinds whose contract says `instances`). */
  gone?(state: string): boolean;
  /** Takes over the instances of a model that migrated here from `fromController` (absent: the kind cannot, and its models are not migrated). */
  adopt?(p: Placement, model: string, fromController: string): Promise<number>;
  close(): void;
}

/** The machines of a kind whose machines are cloud instances: made, listed with a state, taken over. */
export interface InstanceBroker<Placement> extends MachinesOfKind<Placement> {
  instances(p: Placement, model: string): Promise<CloudInstance[]>;
  gone(state: string): boolean;
}

/**
 * `Hosting`: where its controllers go (the settings its `controller` hosting takes), when it hosts
 * them; `Recorded`: what a client records of one (its hosting's `record`).
 */
export interface SubstrateKind<Settings = unknown, Placement = unknown, Hosting = any, Recorded = any> {
  contract: SubstrateContract<Settings>;
  /** Where a model's machines (or pods) go: its settings, the controller they belong to, and its credential's attributes opened. */
  placement?(model: { settings: Settings; controllerUuid: string }, credential: Attributes): Placement;
  /**
   * A new broker for its machines (kinds whose contract says `provisions: "machines"` or `addMachines:
   * "address"`): processes on `host` (local), hosts installed over SSH, a cloud's instances (an
   * {@link InstanceBroker}); the caller closes it.
   */
  machines?(host: MachineHost): MachinesOfKind<Placement>;
  /**
   * A new broker for the pods of its models' applications (kinds whose contract says `pods`), each
   * pod running the agent as `settings` say; the caller closes it.
   */
  pods?(settings: UnitPodSettings): ApplicationBroker<Placement>;
  /**
   * The broker of its units' storage instances (kinds whose contract lists `storagePools`;
   * ./volumes.ts): made, attached to a machine, moved off it (kept), destroyed.
   */
  volumes?(deps: VolumeDeps): VolumeBroker;
  /** Throws (naming what is wrong) when no machine with constraints `c` can be had with `settings`: checked before any is asked for. */
  checkConstraints?(settings: Settings, c: Constraints): void;
  /** Throws when a credential about to be stored cannot be used (asked of the cloud itself: reachable, and with the rights its models need). */
  checkCredential?(name: string, attributes: Attributes): Promise<void>;
  /** Throws when a model with `settings` cannot be made with the credential (asked of the cloud itself). */
  checkPlacement?(credentialName: string, attributes: Attributes, settings: Settings): Promise<void>;
  /**
   * The broker the quorum keeper takes replica hosts from while the controller's replica cloud is
   * this kind (kinds whose contract says `replicaHosts`; ./replica-hosts.ts); the caller closes it.
   */
  replicaHosts?(deps: ReplicaHostDeps<any>): ReplicaHostsOfKind;
  /**
   * Addresses that lead to whichever replicas are ready (a Kubernetes Service's name), given to
   * clients before the replicas' own while the replica cloud is this kind with `settings`.
   */
  replicaServiceAddresses?(settings: any): string[];
  /** Bootstrap and destroy of controllers, when the kind can host them (./controller-hosting.ts). */
  controller?: ControllerHosting<Hosting, Recorded>;
}
