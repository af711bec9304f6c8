/**
 * {@link SshProvisioner}: provisioning for the kinds whose machines are hosts added by address (their
 * contract says `addMachines: "address"`: hosts reached over SSH, bare metal, VMware VMs, any VM),
 * through the kind's machine broker (substrates/<kind>/ `machines()`). Adding one checks the host at
 * once (reachable, host key, credentials, OS, sudo) so a wrong key is refused before anything is
 * recorded; the install then runs in the background, at most {@link SshProvisionerOptions.concurrency}
 * hosts at a time, each step recorded in the machine's status. The private key lives in memory for
 * the install only; it is never stored.
 *
 * It is a worker of every replica, not of the leader: the install runs where the request (and so the
 * key) arrived. Stopping it aborts the installs in flight (their SSH sessions close at once) and waits
 * for them; each records that it was interrupted, as nobody else holds the key to finish it: adding the
 * machine again does (every install step checks before it changes, so the next run takes over).
 */
import type { Logger, ModelSubstrate } from "../../api";
import { StewardError } from "../../api";
import type { MachineHost, MachinesOfKind, ssh } from "../../substrates";
import { substrateKind } from "../../substrates";
import type { StateCache, StateOps } from "../state";
import type { Worker } from "../workers";
import { aborted } from "../workers";
import { waitForAgentLogin } from "./wait-for-login";

export interface SshProvisionerOptions {
  cache: StateCache;
  ops: StateOps;
  /** Handed to each kind's machine broker. */
  host: MachineHost;
  log: Logger;
  caCert: string;
  controllerAddresses: () => string[];
  /**
   * Hosts installed at once.
   * @default 20
   */
  concurrency?: number;
  /**
   * How long an installed agent may take to log in.
   * @default 60000
   */
  loginTimeoutMs?: number;
}

/** What an interrupted install leaves in the machine's status. */
export const INTERRUPTED_INSTALL =
  "interrupted: the controller replica doing it stopped; add the machine again to finish the install";

export class SshProvisioner implements Worker {
  readonly name = "ssh-provisioner";
  private signal?: AbortSignal;
  private running = 0;
  private readonly queue: (() => void)[] = [];
  /** Installs begun and not yet ended (queued ones included): what a stop waits for. */
  private readonly installs = new Set<Promise<void>>();
  /** Each kind's broker, made on its first host. */
  private readonly brokers = new Map<ModelSubstrate, MachinesOfKind<ssh.SshTarget>>();

  constructor(private readonly o: SshProvisionerOptions) {}

  /** Until stopped; then every install in flight is aborted and ended (its interruption recorded) before this resolves. */
  async run(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    await aborted(signal);
    // Queued installs start now, only to see the abort and say so.
    for (const start of this.queue.splice(0)) start();
    while (this.installs.size > 0) await Promise.all([...this.installs]);
    for (const b of this.brokers.values()) b.close();
    this.brokers.clear();
  }

  private brokerOf(substrate: ModelSubstrate): MachinesOfKind<ssh.SshTarget> {
    let broker = this.brokers.get(substrate);
    if (!broker) this.brokers.set(substrate, (broker = substrateKind(substrate).machines!(this.o.host)));
    return broker;
  }

  /** Checks the host and registers the machine (of kind `substrate`); the install continues in the background. */
  async add(
    uuid: string,
    substrate: ModelSubstrate,
    target: ssh.SshTarget & { port: number },
    storageDevices?: string[],
  ): Promise<{ id: string; hostKey: string; created: boolean }> {
    const signal = this.accepting();
    const broker = this.brokerOf(substrate);
    // Refuses unsupported hosts and missing sudo before anything is recorded.
    const hostKey = await broker.admit!(target, { attempts: 3 });
    const m = await this.o.ops.machines.addSsh(
      uuid,
      substrate,
      { host: target.host, port: target.port, user: target.user, hostKey },
      storageDevices,
    );
    await this.o.cache.waitForRevision(m.revision);
    this.accepting();
    await this.o.ops.machines.setInstall(uuid, m.id, { state: "installing", step: "queued" });
    // The key stays in this closure until the install ends; the pinned host key is enforced from now on.
    const pinned = { ...target, hostKey, trustOnFirstUse: false };
    this.schedule(() => this.install(broker, uuid, m.id, pinned, signal));
    return { id: m.id, hostKey, created: m.created };
  }

  /** The running worker's signal; refuses when the worker is not running (a replica starting or stopping). */
  private accepting(): AbortSignal {
    const signal = this.signal;
    if (!signal || signal.aborted)
      throw new StewardError(
        "unavailable",
        "this controller replica is not taking installs now (starting or stopping); try again",
        {
          retryable: true,
        },
      );
    return signal;
  }

  private schedule(job: () => Promise<void>): void {
    const start = (): void => {
      this.running++;
      const p = job().finally(() => {
        this.running--;
        this.installs.delete(p);
        this.queue.shift()?.();
      });
      this.installs.add(p);
    };
    if (this.running < (this.o.concurrency ?? 20)) start();
    else this.queue.push(start);
  }

  private async install(
    broker: MachinesOfKind<ssh.SshTarget>,
    uuid: string,
    id: string,
    target: ssh.SshTarget,
    signal: AbortSignal,
  ): Promise<void> {
    const log = this.o.log.child({ machine: id, host: target.host });
    const record = (
      state: "installing" | "installed" | "failed",
      step: string,
      extra: { changed?: boolean; bytesUploaded?: number } = {},
    ): Promise<void> =>
      this.o.ops.machines
        .setInstall(uuid, id, { state, step, ...extra })
        .catch((err: unknown) => log.warn("could not record install progress", { err }));
    // The last record of a step: one that lands after the interruption's would hide it.
    let recorded = Promise.resolve();
    try {
      signal.throwIfAborted();
      const res = await broker.startMachine(
        {
          model: uuid,
          machine: id,
          placement: target,
          controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert },
          issueCredential: () => this.o.ops.machines.issueCredential(uuid, id),
          waitForLogin: () => this.waitForLogin(uuid, id, signal),
        },
        {
          progress: (step) => {
            if (signal.aborted) return;
            log.info("install step", { step });
            recorded = record("installing", step);
          },
          signal,
        },
      );
      await recorded;
      await record("installed", res.changed ? "installed" : "already installed; nothing changed", {
        changed: res.changed,
        bytesUploaded: res.bytesUploaded,
      });
      log.info(res.changed ? "agent installed" : "agent already installed; nothing changed", {
        bytes_uploaded: res.bytesUploaded,
      });
    } catch (err) {
      await recorded;
      if (signal.aborted) {
        log.warn("agent install interrupted: this replica is stopping");
        await record("failed", INTERRUPTED_INSTALL);
        return;
      }
      const message = StewardError.isInstance(err) ? err.message : (err as Error).message;
      log.error("agent install failed", { err: message });
      await record("failed", message);
    }
  }

  private waitForLogin(uuid: string, id: string, signal: AbortSignal): Promise<void> {
    return waitForAgentLogin(this.o.cache, uuid, id, {
      timeoutMs: this.o.loginTimeoutMs ?? 60_000,
      hint: `it was installed; can the host reach the controller at ${this.o.controllerAddresses().join(", ")}? See /var/lib/steward/agents/${uuid}-${id}/agent.log on the host`,
      signal,
    });
  }
}
