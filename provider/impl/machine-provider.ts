/**
 * The Machine resource: a machine in a model, on this host (local), installed over SSH, or (aws,
 * vsphere) an instance the controller launches from the model's substrate with the constraints
 * given. A cloud machine is created once its agent has enrolled; refresh reports its instance gone
 * (terminated, or destroyed by hand), and the next up replaces it; delete removes the machine,
 * which terminates its instance.
 */
import type { MachineInfo, ModelSubstrate } from "../../api/core";
import {
  StewardError,
  contractNamed,
  contractOf,
  formatConstraints,
  kindsWhere,
  parseConstraints,
  substratesWhere,
  withArticle,
} from "../../api/core";
import type { ControllerConnection, SshHost } from "../connection";
import { BY_ADDRESS_KIND, ON_HOST_KIND } from "../substrate-args";
import { Failures } from "./checks";
import { changed, clientFor, isNotFound, modelStatus, until } from "./session";
import { isUnknown, plain, sameValue } from "./values";

/** The kinds a Machine resource can be: those add-machine makes one of at a time, its agent not started by hand. */
export const MACHINE_SUBSTRATES = substratesWhere((k) => k.addMachines !== undefined && !k.agentsStartedByHand);
export type MachineSubstrate = ModelSubstrate;
/** Instance states after which the instance is not the machine any more (EC2's, and "gone" when the cloud no longer lists it). */
const GONE = ["shutting-down", "terminated", "gone"];

export interface MachineInputs {
  connection: ControllerConnection;
  model: string;
  /** Absent in state written before clouds: ssh when given an SSH host, else local. */
  substrate?: MachineSubstrate;
  /** Where the agent runs: an SSH host, or (absent) a local agent process on the controller's host. */
  ssh?: SshHost;
  /** The SSH private key (secret); used for the install only and never stored by the controller. */
  privateKey?: string;
  /** Cloud machines: Juju's syntax, as given. */
  constraints?: string;
  /** Cloud machines: how long create waits for the agent to enrol. */
  timeoutSeconds?: number;
  forceDelete: boolean;
}
export interface MachineOutputs extends MachineInputs {
  machineId: string;
  address: string;
  status: string;
  instanceId?: string;
  zone?: string;
  instanceState?: string;
  hardware?: string;
}

const substrateOf = (i: MachineInputs): MachineSubstrate => i.substrate ?? (i.ssh ? BY_ADDRESS_KIND : ON_HOST_KIND);
/** Constraints compared as what they mean: `mem=4096` and `mem=4G` are the same. */
const normalConstraints = (text: string | undefined): string => {
  try {
    return formatConstraints(parseConstraints(text ?? ""));
  } catch {
    return text ?? "";
  }
};

export const machineProvider = {
  async check(_olds: MachineInputs, news: MachineInputs) {
    const f = new Failures();
    f.connection(news.connection);
    f.name("model", news.model, "model name");
    f.oneOf("substrate", news.substrate, MACHINE_SUBSTRATES);
    const substrate = substrateOf(news);
    // An unknown substrate is refused above; nothing else is said of it.
    const cloud = contractNamed(substrate)?.instances ?? false;
    const byAddress = contractNamed(substrate)?.addMachines === "address";
    if (cloud) {
      if (news.ssh !== undefined)
        f.add(
          "ssh",
          `only for ssh machines: ${withArticle(substrate)} machine is launched by the controller, and its agent enrols itself`,
        );
      if (news.privateKey !== undefined) f.add("privateKey", `only for ssh machines, not ${substrate}`);
      f.wholeNumber("timeoutSeconds", news.timeoutSeconds, 30, 24 * 3600);
    } else if (news.constraints !== undefined) {
      f.add(
        "constraints",
        `only for ${kindsWhere((k) => k.instances)} machines, which the controller provisions; ${substrate} machines are what they are`,
      );
    }
    if (byAddress && news.ssh && !isUnknown(news.ssh)) {
      f.sshHost("ssh", news.ssh);
      if (!news.privateKey) f.add("privateKey", "required with ssh: the private key's content (pass it as a secret)");
    }
    if (byAddress && news.ssh === undefined)
      f.add("ssh", "required for an ssh machine: { host, port?, user?, hostKey }");
    if (cloud && typeof news.constraints === "string") {
      try {
        parseConstraints(news.constraints);
      } catch (e) {
        if (!StewardError.isInstance(e)) throw e;
        f.add("constraints", e.message.replace(/^constraints: /, ""));
      }
    }
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: MachineOutputs, news: MachineInputs) {
    const replaces: string[] = [];
    if (olds.model !== news.model) replaces.push("model");
    if (substrateOf(olds) !== substrateOf(news)) replaces.push("substrate");
    if (!sameValue(olds.ssh, news.ssh)) replaces.push("ssh");
    // A machine's constraints are fixed when it is made (as Juju's are): others make another machine.
    if (normalConstraints(olds.constraints) !== normalConstraints(news.constraints)) replaces.push("constraints");
    // Refresh found its instance terminated or destroyed: only a new machine brings one back.
    if (olds.instanceState !== undefined && GONE.includes(olds.instanceState)) replaces.push("instanceState");
    // A machine that is gone (refresh found it removed by hand) comes back through create, not here.
    const changes =
      replaces.length > 0 ||
      !sameValue(olds.connection, news.connection) ||
      olds.privateKey !== news.privateKey ||
      olds.forceDelete !== news.forceDelete ||
      olds.timeoutSeconds !== news.timeoutSeconds;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: MachineInputs) {
    const client = clientFor(inputs.connection);
    const substrate = substrateOf(inputs);
    let machineId: string;
    if (contractOf(substrate).addMachines === "address") {
      const s = inputs.ssh!;
      const res = await client.addSshMachine(inputs.model, {
        host: s.host,
        port: s.port ?? 22,
        user: s.user ?? "root",
        privateKey: inputs.privateKey!,
        hostKey: s.hostKey,
      });
      machineId = res.machines[0]!.id;
    } else {
      machineId = (await client.addMachines(inputs.model, substrate, 1, inputs.constraints || undefined)).machines[0]!
        .id;
    }
    changed(inputs.connection, inputs.model);
    let m = (await client.listMachines(inputs.model)).find((x) => x.id === machineId);
    if (contractOf(substrate).instances) m = await enrolled(inputs, machineId);
    return { id: `${inputs.model}/${machineId}`, outs: plain({ ...inputs, machineId, ...observed(m) }) };
  },

  async read(id: string, props: MachineOutputs) {
    const status = await modelStatus(props.connection, props.model, true);
    const m = status?.machines[props.machineId];
    if (!m || m.life !== "alive") return {};
    const outs: MachineOutputs = {
      ...props,
      address: m.address,
      status: m.status.current,
      ...(m.instance
        ? {
            instanceId: m.instance.id,
            instanceState: m.instance.state,
            ...(m.instance.zone ? { zone: m.instance.zone } : {}),
          }
        : {}),
      ...(m.hardware ? { hardware: m.hardware } : {}),
    };
    return { id, props: plain(outs), inputs: plain(inputsOf(outs)) };
  },

  async update(_id: string, olds: MachineOutputs, news: MachineInputs) {
    const { machineId, address, status, instanceId, zone, instanceState, hardware } = olds;
    return {
      outs: plain({
        ...news,
        machineId,
        address,
        status,
        ...(instanceId !== undefined ? { instanceId, instanceState, ...(zone !== undefined ? { zone } : {}) } : {}),
        ...(hardware !== undefined ? { hardware } : {}),
      }),
    };
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
    // A cloud machine's record goes once the controller has terminated its instance.
    await until(`machine ${props.machineId} of model "${props.model}" to be removed`, 10 * 60_000, async () => {
      const s = await modelStatus(props.connection, props.model);
      return !s?.machines[props.machineId];
    });
  },
};

/** Waits for a cloud machine's agent; a launch that fails removes the machine (and so its instance) and says why. */
async function enrolled(inputs: MachineInputs, machineId: string): Promise<MachineInfo> {
  const client = clientFor(inputs.connection);
  let last: MachineInfo | undefined;
  let failure: string | undefined;
  try {
    await until(
      `machine ${machineId} of model "${inputs.model}" to start (its instance to boot and its agent to enrol)`,
      (inputs.timeoutSeconds ?? 900) * 1000,
      async () => {
        last = (await client.listMachines(inputs.model)).find((x) => x.id === machineId);
        if (last?.install?.state === "failed") failure = last.install.step;
        // Installed as well as started: the hardware launched is recorded then.
        return failure !== undefined || (last?.status === "started" && last.install?.state === "installed");
      },
      250,
    );
  } catch (e) {
    failure = (e as Error).message;
  }
  if (failure === undefined) return last!;
  await client.removeMachine(inputs.model, machineId, true).catch(() => undefined);
  changed(inputs.connection, inputs.model);
  throw new StewardError(
    "unavailable",
    `${withArticle(substrateOf(inputs))} machine could not be provisioned (it was removed again): ${failure}`,
    { reason: "provisioning-failed" },
  );
}

function observed(m: MachineInfo | undefined): Omit<MachineOutputs, keyof MachineInputs | "machineId"> {
  return {
    address: m?.address ?? "",
    status: m?.status ?? "pending",
    ...(m?.instance
      ? {
          instanceId: m.instance.id,
          instanceState: m.instance.state,
          ...(m.instance.zone ? { zone: m.instance.zone } : {}),
        }
      : {}),
    ...(m?.hardware ? { hardware: m.hardware } : {}),
  };
}

function inputsOf(o: MachineOutputs): MachineInputs {
  const {
    machineId: _m,
    address: _a,
    status: _s,
    instanceId: _i,
    zone: _z,
    instanceState: _st,
    hardware: _h,
    ...inputs
  } = o;
  return inputs;
}
