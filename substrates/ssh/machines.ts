/**
 * The SSH substrate's machines: a host reached over SSH (bare metal, a VMware VM, any VM) gets an
 * agent installed as a service (agent-installer.ts); stopping it is the agent's own uninstall when
 * its machine is removed, so the broker only installs. An abort (`signal`) closes the session at
 * once: the install stops between steps or in one, each of which the next run checks and finishes.
 */
import type { MachineBroker, MachineSpec, MachineTarget, Progress, StartedMachine } from "../brokers";
import { agentConfigOf } from "../brokers";
import { AGENT_BUNDLE } from "../controller-files";
import { installAgent } from "./agent-installer";
import type { SshTarget } from "./ssh-session";
import { SshSession } from "./ssh-session";

export class SshMachines implements MachineBroker<SshTarget> {
  async startMachine(
    spec: MachineSpec<SshTarget>,
    opts: { progress?: Progress; signal?: AbortSignal } = {},
  ): Promise<StartedMachine> {
    const session = await SshSession.connect(spec.placement, opts.signal ? { signal: opts.signal } : {});
    try {
      const res = await installAgent(session, {
        name: `${spec.model}-${spec.machine}`,
        bundle: AGENT_BUNDLE,
        nodeBinary: process.execPath,
        configMatches: (c) =>
          c.model === spec.model &&
          c.machine === spec.machine &&
          c.caCert === spec.controller.caCert &&
          c.controllerAddresses.join(",") === spec.controller.addresses.join(","),
        newConfig: async () => agentConfigOf(spec, await spec.issueCredential()),
        waitForLogin: () => spec.waitForLogin?.() ?? Promise.resolve(),
        progress: (step) => opts.progress?.(step),
      });
      return {
        instanceId: `${spec.placement.user}@${spec.placement.host}`,
        changed: res.changed,
        bytesUploaded: res.bytesUploaded,
      };
    } finally {
      session.close();
    }
  }

  /** The agent uninstalls itself when the controller tells it its machine is gone. */
  async stopMachine(_target: MachineTarget<SshTarget>): Promise<void> {}
}
