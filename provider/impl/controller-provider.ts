/**
 * The Controller resource: a controller on this host (`local`, one replica, embedded store) or on
 * SSH hosts (`ssh`: installed on the first host, grown to 3, 5 or 7 replicas as enable-ha does,
 * spares handed to the quorum keeper). The connection it outputs (addresses, CA, admin password)
 * is secret in the state. Growing `replicas` is an update; shrinking is refused.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { ControllerClient, destroyAllModels, splitAddress, waitForHealth, waitForVoters } from "../../api";
import { controllerFiles, freePort, initLocalController, removeLocalController, ssh, startLocalController } from "../../substrates";
import type { ClusterInfo, SpareHost } from "../../api";
import type { ControllerConnection, SshHost } from "../connection";
import { REPLICA_COUNTS } from "../connection";
import { Failures } from "./checks";
import { PartialFailure } from "./session";
import { isUnknown, plain, sameValue } from "./values";

export interface ControllerInputs {
  name: string;
  substrate: "local" | "ssh";
  /** local: where its data lives (default ~/.steward/pulumi/<name>). */
  dataDir?: string;
  /** API port (local: a free one; ssh: 17070). */
  port?: number;
  /** ssh: the hosts; replicas go on the first `replicas` of them. */
  hosts?: SshHost[];
  /** ssh: hosts the quorum keeper may install a replacement replica on. */
  spares?: SshHost[];
  /** ssh: the private key's content (secret). */
  privateKey?: string;
  replicas: number;
  replaceAfterSeconds?: number;
  maxReplacementsPerHour?: number;
  /** local: the admin password to set (generated when absent); with `adopt`, the existing one. */
  adminPassword?: string;
  adopt: boolean;
  timeoutSeconds: number;
}
export interface ControllerOutputs extends ControllerInputs {
  connection: ControllerConnection;
  adminPassword: string;
  uuid: string;
  addresses: string[];
  caCert: string;
  members: { name: string; host: string; hasVote: boolean; present: boolean; leader: boolean }[];
  leader: string;
}

export const controllerProvider = {
  async check(olds: Partial<ControllerInputs>, news: ControllerInputs) {
    const f = new Failures();
    f.name("name", news.name, "controller name");
    f.oneOf("substrate", news.substrate, ["local", "ssh"]);
    f.oneOf("replicas", news.replicas, REPLICA_COUNTS, "an even number of voters tolerates no more failures than one fewer, and etcd advises at most 7");
    f.wholeNumber("port", news.port, 1, 65535);
    f.wholeNumber("replaceAfterSeconds", news.replaceAfterSeconds, 5, 7 * 86400);
    f.wholeNumber("maxReplacementsPerHour", news.maxReplacementsPerHour, 0, 60);
    if (news.substrate === "local") {
      if (typeof news.replicas === "number" && news.replicas > 1) f.add("replicas", "a local controller has one replica; use substrate \"ssh\" with 3, 5 or 7 hosts for high availability");
      if (news.hosts?.length) f.add("hosts", "only for substrate \"ssh\"");
    }
    if (news.substrate === "ssh") {
      const hosts = Array.isArray(news.hosts) ? news.hosts : [];
      if (!isUnknown(news.hosts) && hosts.length === 0) f.add("hosts", "required with substrate \"ssh\": at least one host");
      if (typeof news.replicas === "number" && !isUnknown(news.hosts) && hosts.length < news.replicas) f.add("hosts", `${news.replicas} replicas need ${news.replicas} hosts; ${hosts.length} given`);
      hosts.forEach((h, i) => f.sshHost(`hosts[${i}]`, h));
      (news.spares ?? []).forEach((h, i) => f.sshHost(`spares[${i}]`, h));
      if (!news.privateKey) f.add("privateKey", "required with substrate \"ssh\": the private key's content (pass it as a secret)");
      if (news.spares?.length && news.replicas === 1) f.add("spares", "spares are for the quorum keeper of a 3, 5 or 7 replica controller; give them together with replicas: 3");
      if (news.adminPassword && !news.adopt) f.add("adminPassword", "an SSH controller makes its own admin password (an output); give one only with adopt: true");
    }
    if (typeof olds.replicas === "number" && typeof news.replicas === "number" && news.replicas < olds.replicas) {
      f.add("replicas", `shrinking from ${olds.replicas} to ${news.replicas} replicas is not supported; a controller only grows`);
    }
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: ControllerOutputs, news: ControllerInputs) {
    const replaces: string[] = [];
    if (olds.name !== news.name) replaces.push("name");
    if (olds.substrate !== news.substrate) replaces.push("substrate");
    if ((olds.dataDir ?? "") !== (news.dataDir ?? "")) replaces.push("dataDir");
    if ((olds.port ?? 0) !== (news.port ?? 0)) replaces.push("port");
    if (olds.substrate === "ssh" && olds.hosts?.[0]?.host !== news.hosts?.[0]?.host) replaces.push("hosts");
    const changes = replaces.length > 0 || olds.replicas !== news.replicas || !sameValue(olds.spares ?? [], news.spares ?? [])
      || !sameValue(olds.hosts ?? [], news.hosts ?? []) || olds.replaceAfterSeconds !== news.replaceAfterSeconds
      || olds.maxReplacementsPerHour !== news.maxReplacementsPerHour || olds.privateKey !== news.privateKey || olds.timeoutSeconds !== news.timeoutSeconds;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: ControllerInputs) {
    const started = inputs.substrate === "local" ? await startLocal(inputs) : await installOverSsh(inputs);
    const client = started.client;
    try {
      const id = started.uuid;
      try {
        await grow(client, inputs, 1);
        return { id, outs: await observe(client, inputs, started) };
      } catch (e) {
        // The first replica exists: record it, so the next up grows it rather than installing again.
        throw new PartialFailure(id, await observe(client, inputs, started).catch(() => plain({ ...inputs, ...started.facts })), [(e as Error).message]);
      }
    } finally {
      client.close();
    }
  },

  async read(id: string, props: ControllerOutputs) {
    const client = connect(props.connection);
    try {
      const info = await client.controllerInfo().catch((e: unknown) => { if (props.substrate === "local") return undefined; throw e; });
      if (!info || info.uuid !== id) return {};
      const outs = await observe(client, props, { uuid: id, caCert: props.caCert, adminPassword: props.adminPassword });
      return { id, props: outs, inputs: plain(inputsOf(outs)) };
    } finally {
      client.close();
    }
  },

  async update(_id: string, olds: ControllerOutputs, news: ControllerInputs) {
    const client = connect(olds.connection);
    try {
      await grow(client, news, olds.replicas, olds.spares ?? []);
      return { outs: await observe(client, news, { uuid: olds.uuid, caCert: olds.caCert, adminPassword: olds.adminPassword }) };
    } finally {
      client.close();
    }
  },

  async delete(_id: string, props: ControllerOutputs) {
    const client = connect(props.connection);
    try {
      await destroyAllModels(client, 5 * 60_000).catch(() => undefined);
    } finally {
      client.close();
    }
    if (props.substrate === "local") {
      await removeLocalController(dataDirOf(props));
      return;
    }
    const hosts = new Map<string, SshHost>();
    for (const h of [...(props.hosts ?? []), ...(props.spares ?? [])]) hosts.set(h.host, h);
    for (const h of hosts.values()) {
      const s = await ssh.SshSession.connect({ host: h.host, port: h.port ?? 22, user: h.user ?? "root", privateKey: props.privateKey!, hostKey: h.hostKey }).catch(() => undefined);
      if (!s) continue; // a host that is gone holds nothing to remove
      try { await ssh.uninstallController(s); } finally { s.close(); }
    }
  },
};

interface Started { client: ControllerClient; uuid: string; caCert: string; adminPassword: string; facts?: Record<string, unknown> }

const dataDirOf = (i: ControllerInputs): string => i.dataDir ?? join(homedir(), ".steward", "pulumi", i.name);

function connect(c: ControllerConnection): ControllerClient {
  return new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: c.user, password: c.password });
}

async function startLocal(i: ControllerInputs): Promise<Started> {
  const dataDir = dataDirOf(i);
  const port = i.port ?? await freePort("127.0.0.1");
  const init = await initLocalController({ dataDir, name: i.name, listen: { host: "127.0.0.1", port }, ...(i.adminPassword ? { adminPassword: i.adminPassword } : {}) });
  const adminPassword = init.adminPassword ?? (i.adopt ? i.adminPassword : undefined);
  if (!adminPassword) throw new Error(`${dataDir} already holds a controller: set adopt: true and its adminPassword to take it over, or choose another dataDir`);
  const addresses = await startLocalController(dataDir, init.caCert);
  return loggedIn(addresses, init.caCert, adminPassword);
}

async function installOverSsh(i: ControllerInputs): Promise<Started> {
  const first = i.hosts![0]!;
  const port = i.port ?? 17070;
  const s = await ssh.SshSession.connect({ host: first.host, port: first.port ?? 22, user: first.user ?? "root", privateKey: i.privateKey!, hostKey: first.hostKey });
  let res;
  try {
    res = await ssh.installController(s, { name: i.name, port, files: controllerFiles() });
  } finally {
    s.close();
  }
  const adminPassword = res.adminPassword ?? (i.adopt ? i.adminPassword : undefined);
  if (!adminPassword) throw new Error(`${first.host} already runs a controller: set adopt: true and its adminPassword to take it over`);
  const probe = new ControllerClient({ addresses: res.addresses, caCert: res.caCert, timeoutMs: 3000 });
  try {
    await waitForHealth(probe, 60_000, `is port ${port} of ${first.host} reachable from here? Its log is /var/lib/steward/controller/controller.log`);
  } finally {
    probe.close();
  }
  return loggedIn(res.addresses, res.caCert, adminPassword);
}

async function loggedIn(addresses: string[], caCert: string, adminPassword: string): Promise<Started> {
  const client = new ControllerClient({ addresses, caCert, user: "admin", password: adminPassword });
  await client.login();
  return { client, uuid: (await client.controllerInfo()).uuid, caCert, adminPassword };
}

const spareOf = (h: SshHost, privateKey: string): SpareHost => ({ host: h.host, port: h.port ?? 22, user: h.user ?? "root", privateKey, hostKey: h.hostKey });

/** Grows to `replicas` (enable-ha), hands new spares to the keeper and applies its settings. */
async function grow(client: ControllerClient, i: ControllerInputs, had: number, hadSpares: SshHost[] = []): Promise<void> {
  if (i.substrate !== "ssh") return;
  const key = i.privateKey!;
  const newSpares = (i.spares ?? []).filter((h) => !hadSpares.some((o) => o.host === h.host));
  const settings = { ...(i.replaceAfterSeconds ? { replaceAfterSeconds: i.replaceAfterSeconds } : {}), ...(i.maxReplacementsPerHour !== undefined ? { maxReplacementsPerHour: i.maxReplacementsPerHour } : {}) };
  if (i.replicas > had) {
    const info = await client.controllerInfo();
    // Hosts replicas run on already (on the embedded store the only replica has no member record).
    const used = new Set([...info.cluster.members.map((m) => m.host), ...info.replicas.flatMap((r) => r.addresses.map((a) => splitAddress(a)[0]))]);
    const hosts = (i.hosts ?? []).slice(0, i.replicas).filter((h) => !used.has(h.host)).map((h) => spareOf(h, key));
    await client.enableHa({ replicas: i.replicas, hosts, ...settings });
    await waitForVoters(client, i.replicas, i.timeoutSeconds * 1000);
  } else if (i.replicas > 1 && Object.keys(settings).length > 0) {
    await client.enableHa({ replicas: i.replicas, ...settings });
  }
  if (newSpares.length > 0) await client.addSpares(newSpares.map((h) => spareOf(h, key)));
}

async function observe(client: ControllerClient, i: ControllerInputs, s: Pick<Started, "uuid" | "caCert" | "adminPassword">): Promise<ControllerOutputs> {
  const info = await client.controllerInfo();
  const c: ClusterInfo = info.cluster;
  const voters = c.store === "etcd" ? c.members.filter((m) => m.hasVote).length : 1;
  return plain({
    ...i,
    replicas: voters,
    adminPassword: s.adminPassword,
    connection: { addresses: info.addresses, caCert: s.caCert, user: "admin", password: s.adminPassword },
    uuid: s.uuid,
    addresses: info.addresses,
    caCert: s.caCert,
    members: c.store === "etcd"
      ? c.members.filter((m) => m.state !== "removed").map((m) => ({ name: m.name, host: m.host, hasVote: m.hasVote, present: m.present, leader: m.leader }))
      : info.replicas.map((r) => ({ name: r.id, host: r.addresses[0]?.split(":")[0] ?? "", hasVote: true, present: true, leader: r.leader })),
    leader: info.replicas.find((r) => r.leader)?.id ?? "",
  });
}

function inputsOf(o: ControllerOutputs): ControllerInputs {
  const { connection: _c, uuid: _u, addresses: _a, caCert: _k, members: _m, leader: _l, ...inputs } = o;
  return inputs;
}
