/**
 * A controller installed over SSH (`steward bootstrap ssh:user@host,…`, the Controller resource
 * with substrate "ssh"): the first host gets the controller (./controller-installer.ts) with its host
 * key pinned (or trusted on first use when asked), the others are the hosts it grows onto as
 * enable-ha does. Destroying it uninstalls the controller from every host given; a host that no
 * longer answers holds nothing to remove.
 */
import { ControllerClient, StewardError, waitForHealth } from "../../api/core";
import { controllerFiles } from "../controller-files";
import type { ControllerHosting } from "../controller-hosting";
import { alreadyThere } from "../controller-hosting";
import { installController, uninstallController } from "./controller-installer";
import { sshReplicaUpgrade } from "./replica-upgrade";
import type { SshTarget } from "./ssh-session";
import { SshSession } from "./ssh-session";

/** A controller installed over SSH on `hosts[0]`, grown onto the others (each with its key). */
export interface SshControllerSettings {
  hosts: SshTarget[];
}

/** What a client records of a controller over SSH: nothing (its hosts' keys are secret; the replicas' hosts are the ones the controller reports). */
export type SshControllerRecord = Record<string, never>;

export const sshHosting: ControllerHosting<SshControllerSettings, SshControllerRecord> = {
  async bootstrap(plan, o) {
    const [target, ...others] = plan.settings.hosts;
    if (!target) throw new StewardError("invalid-request", "a controller over SSH needs a host");
    const port = plan.port ?? 17070;
    const session = await SshSession.connect(target, o.signal ? { signal: o.signal } : {});
    let res;
    try {
      o.progress(`Connected to ${session.label} (host key ${session.hostKey}${target.hostKey ? "" : ", recorded"})`);
      res = await installController(session, {
        name: plan.name,
        port,
        files: controllerFiles(),
        progress: (step) => o.progress(`  ${step}`),
      });
    } finally {
      session.close();
    }
    if (!res.adminPassword && !plan.adopt) throw alreadyThere(o, target.host);
    o.progress(`Waiting for the controller API at ${res.addresses.join(", ")}`);
    const probe = new ControllerClient({ addresses: res.addresses, caCert: res.caCert, timeoutMs: 3000 });
    try {
      await waitForHealth(
        probe,
        60_000,
        `is port ${port} of ${target.host} reachable from here? Its log is /var/lib/steward/controller/controller.log`,
      );
    } finally {
      probe.close();
    }
    return {
      addresses: res.addresses,
      caCert: res.caCert,
      where: target.host,
      callTimeoutMs: 3000,
      ...(res.adminPassword ? { adminPassword: res.adminPassword } : {}),
      hosts: others.map((h) => ({
        host: h.host,
        port: h.port ?? 22,
        user: h.user,
        privateKey: h.privateKey,
        ...(h.hostKey ? { hostKey: h.hostKey } : {}),
        ...(h.trustOnFirstUse ? { trustOnFirstUse: true } : {}),
      })),
      growing: `Growing to ${plan.replicas} replicas on ${others.map((h) => h.host).join(", ")}`,
    };
  },

  async destroy(target, o) {
    const removed: string[] = [];
    const hosts = new Map(target.settings.hosts.map((h) => [h.host, h]));
    for (const h of hosts.values()) {
      const s = await SshSession.connect(h).catch(() => undefined);
      if (!s) continue; // a host that is gone holds nothing to remove
      try {
        o.progress(`Removing the controller from ${h.host}`);
        await uninstallController(s);
        removed.push(h.host);
      } finally {
        s.close();
      }
    }
    return removed;
  },

  record: () => ({}),
  replicaUpgrade: sshReplicaUpgrade,
};
