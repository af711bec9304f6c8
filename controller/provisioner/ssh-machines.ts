/**
 * {@link SshProvisioner}: provisioning for the SSH substrate, whose machines are hosts reached over SSH
 * (bare metal, VMware VMs, any VM). Adding one checks the host at once (reachable, host key, credentials,
 * OS, sudo) so a wrong key is refused before anything is recorded; the install then runs in the
 * background, at most {@link SshProvisionerOptions.concurrency} hosts at a time, each step recorded in
 * the machine's status. The private key lives in memory for the install only; it is never stored.
 */
import type { Logger } from "../../api";
import { StewardError } from "../../api";
import { ssh } from "../../substrates";
import type { StateCache, StateOps } from "../state";
import { waitForAgentLogin } from "./wait-for-login";

export interface SshProvisionerOptions {
  cache: StateCache;
  ops: StateOps;
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

export class SshProvisioner {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private readonly machines = new ssh.SshMachines();

  constructor(private readonly o: SshProvisionerOptions) {}

  /** Checks the host and registers the machine; the install continues in the background. */
  async add(
    uuid: string,
    target: ssh.SshTarget & { port: number },
  ): Promise<{ id: string; hostKey: string; created: boolean }> {
    // Refuses unsupported hosts and missing sudo before anything is recorded.
    const hostKey = await ssh.checkHost(target, 3);
    const m = await this.o.ops.machines.addSsh(uuid, {
      host: target.host,
      port: target.port,
      user: target.user,
      hostKey,
    });
    await this.o.cache.waitForRevision(m.revision);
    await this.o.ops.machines.setInstall(uuid, m.id, { state: "installing", step: "queued" });
    // The key stays in this closure until the install ends; the pinned host key is enforced from now on.
    const pinned = { ...target, hostKey, trustOnFirstUse: false };
    this.schedule(() => this.install(uuid, m.id, pinned));
    return { id: m.id, hostKey, created: m.created };
  }

  private schedule(job: () => Promise<void>): void {
    const start = (): void => {
      this.running++;
      void job().finally(() => {
        this.running--;
        this.queue.shift()?.();
      });
    };
    if (this.running < (this.o.concurrency ?? 20)) start();
    else this.queue.push(start);
  }

  private async install(uuid: string, id: string, target: ssh.SshTarget): Promise<void> {
    const log = this.o.log.child({ machine: id, host: target.host });
    const record = (
      state: "installing" | "installed" | "failed",
      step: string,
      extra: { changed?: boolean; bytesUploaded?: number } = {},
    ): Promise<void> =>
      this.o.ops.machines
        .setInstall(uuid, id, { state, step, ...extra })
        .catch((err: unknown) => log.warn("could not record install progress", { err }));
    try {
      const res = await this.machines.startMachine(
        {
          model: uuid,
          machine: id,
          placement: target,
          controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert },
          issueCredential: () => this.o.ops.machines.issueCredential(uuid, id),
          waitForLogin: () => this.waitForLogin(uuid, id),
        },
        {
          progress: (step) => {
            log.info("install step", { step });
            void record("installing", step);
          },
        },
      );
      await record("installed", res.changed ? "installed" : "already installed; nothing changed", {
        changed: res.changed,
        bytesUploaded: res.bytesUploaded,
      });
      log.info(res.changed ? "agent installed" : "agent already installed; nothing changed", {
        bytes_uploaded: res.bytesUploaded,
      });
    } catch (err) {
      const message = StewardError.isInstance(err) ? err.message : (err as Error).message;
      log.error("agent install failed", { err: message });
      await record("failed", message);
    }
  }

  private waitForLogin(uuid: string, id: string): Promise<void> {
    return waitForAgentLogin(
      this.o.cache,
      uuid,
      id,
      this.o.loginTimeoutMs ?? 60_000,
      `it was installed; can the host reach the controller at ${this.o.controllerAddresses().join(", ")}? See /var/lib/steward/agents/${uuid}-${id}/agent.log on the host`,
    );
  }
}
