/** The Machine resource: a machine in a model, on this host (local) or installed over SSH. */
import type { ControllerConnection, SshHost } from "../connection";
import { Failures } from "./checks";
import { changed, clientFor, isNotFound, modelStatus, until } from "./session";
import { isUnknown, plain, sameValue } from "./values";

export interface MachineInputs {
  connection: ControllerConnection;
  model: string;
  /** Where the agent runs: an SSH host, or (absent) a local agent process on the controller's host. */
  ssh?: SshHost;
  /** The SSH private key (secret); used for the install only and never stored by the controller. */
  privateKey?: string;
  forceDelete: boolean;
}
export interface MachineOutputs extends MachineInputs { machineId: string; address: string; status: string }

export const machineProvider = {
  async check(_olds: MachineInputs, news: MachineInputs) {
    const f = new Failures();
    f.connection(news.connection);
    f.name("model", news.model, "model name");
    if (news.ssh && !isUnknown(news.ssh)) {
      f.sshHost("ssh", news.ssh);
      if (!news.privateKey) f.add("privateKey", "required with ssh: the private key's content (pass it as a secret)");
    }
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: MachineOutputs, news: MachineInputs) {
    const replaces: string[] = [];
    if (olds.model !== news.model) replaces.push("model");
    if (!sameValue(olds.ssh, news.ssh)) replaces.push("ssh");
    // A machine that is gone (refresh found it removed by hand) comes back through create, not here.
    const changes = replaces.length > 0 || !sameValue(olds.connection, news.connection) || olds.privateKey !== news.privateKey || olds.forceDelete !== news.forceDelete;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: MachineInputs) {
    const client = clientFor(inputs.connection);
    let machineId: string;
    if (inputs.ssh) {
      const s = inputs.ssh;
      const res = await client.addSshMachine(inputs.model, { host: s.host, port: s.port ?? 22, user: s.user ?? "root", privateKey: inputs.privateKey!, hostKey: s.hostKey });
      machineId = res.machines[0]!.id;
    } else {
      machineId = (await client.addMachines(inputs.model, "local", 1)).machines[0]!.id;
    }
    changed(inputs.connection, inputs.model);
    const m = (await client.listMachines(inputs.model)).find((x) => x.id === machineId);
    return { id: `${inputs.model}/${machineId}`, outs: plain({ ...inputs, machineId, address: m?.address ?? "", status: m?.status ?? "pending" }) };
  },

  async read(id: string, props: MachineOutputs) {
    const status = await modelStatus(props.connection, props.model, true);
    const m = status?.machines[props.machineId];
    if (!m || m.life !== "alive") return {};
    const outs: MachineOutputs = { ...props, address: m.address, status: m.status.current };
    return { id, props: plain(outs), inputs: plain(inputsOf(outs)) };
  },

  async update(_id: string, olds: MachineOutputs, news: MachineInputs) {
    return { outs: plain({ ...news, machineId: olds.machineId, address: olds.address, status: olds.status }) };
  },

  async delete(_id: string, props: MachineOutputs) {
    const client = clientFor(props.connection);
    try {
      await client.removeMachine(props.model, props.machineId, props.forceDelete);
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    changed(props.connection, props.model);
    await until(`machine ${props.machineId} of model "${props.model}" to be removed`, 10 * 60_000, async () => {
      const s = await modelStatus(props.connection, props.model);
      return !s?.machines[props.machineId];
    });
  },
};

function inputsOf(o: MachineOutputs): MachineInputs {
  const { machineId: _m, address: _a, status: _s, ...inputs } = o;
  return inputs;
}
