/**
 * The Controller resource: a controller on this host (local, one replica, embedded store), on
 * SSH hosts (ssh: installed on the first host, grown to 3, 5 or 7 replicas as enable-ha does,
 * spares handed to the quorum keeper), or on a cloud (aws, vsphere: the first replica on an
 * instance or VM it launches, as `steward bootstrap aws:` / `vsphere:` do; the controller launches
 * the others and replaces lost ones itself; delete removes every instance or VM marked with the
 * controller). The connection it outputs
 * (addresses, CA, admin password) is secret in the state. Growing `replicas` is an update;
 * shrinking is refused.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import {
  ControllerClient,
  contractOf,
  destroyAllModels,
  splitAddress,
  substratesWhere,
  waitForVoters,
  withArticle,
} from "../../api/core";
import { bootstrapController, destroyController, handOverReplicaCloud } from "../../substrates";
import type { ControllerPlan, HostingKind, HostingSettings, HostingOptions } from "../../substrates";
import type {
  ClusterInfo,
  InstanceCloudSubstrate,
  ReplicaCloudSetting,
  ReplicaSettingsByKind,
  SpareHost,
} from "../../api/core";
import type { ControllerConnection, SshHost } from "../connection";
import { REPLICA_COUNTS } from "../connection";
import { BY_ADDRESS_KIND, CLOUD_KINDS, ON_HOST_KIND, credentialArg, credentialAttributes } from "../substrate-args";
import { requiredCredentialFields } from "../substrate-args";
import type { ByAddressKind, OnHostKind } from "../substrate-args";
import { Failures } from "./checks";
import { schemas } from "./schemas";
import { PartialFailure } from "./session";
import { isUnknown, plain, sameValue } from "./values";

/** The kinds a Controller resource runs on: this host, SSH hosts, or a cloud's instances (as the contracts order them). */
export type ControllerSubstrate = OnHostKind | ByAddressKind | InstanceCloudSubstrate;
const CONTROLLER_KINDS = substratesWhere(
  (k) => k.name === ON_HOST_KIND || k.name === BY_ADDRESS_KIND || k.replicaHosts === "instances",
) as ControllerSubstrate[];

/**
 * Each cloud's arguments, named after it (the package's published names: aws and awsCredential,
 * vsphere and vsphereCredential): where its instances go (also the replica cloud's placement),
 * and the credential it launches them with, stored in the controller as `credentialName` (secret).
 */
export type CloudInputs = { [K in InstanceCloudSubstrate]?: ReplicaSettingsByKind[K] } & {
  [K in InstanceCloudSubstrate as `${K}Credential`]?: Record<string, string>;
};

export interface ControllerInputs extends CloudInputs {
  name: string;
  substrate: ControllerSubstrate;
  /** Clouds: the stored credential's name (default: the substrate's), for models' `credential` too. */
  credentialName?: string;
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
    f.oneOf("substrate", news.substrate, CONTROLLER_KINDS);
    f.oneOf(
      "replicas",
      news.replicas,
      REPLICA_COUNTS,
      "an even number of voters tolerates no more failures than one fewer, and etcd advises at most 7",
    );
    f.wholeNumber("port", news.port, 1, 65535);
    f.wholeNumber("replaceAfterSeconds", news.replaceAfterSeconds, 5, 7 * 86400);
    f.wholeNumber("maxReplacementsPerHour", news.maxReplacementsPerHour, 0, 60);
    const ssh = BY_ADDRESS_KIND;
    if (news.substrate === ON_HOST_KIND) {
      if (typeof news.replicas === "number" && news.replicas > 1)
        f.add(
          "replicas",
          `${withArticle(news.substrate)} controller has one replica; use substrate "${ssh}" with 3, 5 or 7 hosts for high availability`,
        );
      if (news.hosts?.length) f.add("hosts", `only for substrate "${ssh}"`);
    }
    if (news.substrate === ssh) {
      const hosts = Array.isArray(news.hosts) ? news.hosts : [];
      if (!isUnknown(news.hosts) && hosts.length === 0)
        f.add("hosts", `required with substrate "${ssh}": at least one host`);
      if (typeof news.replicas === "number" && !isUnknown(news.hosts) && hosts.length < news.replicas)
        f.add("hosts", `${news.replicas} replicas need ${news.replicas} hosts; ${hosts.length} given`);
      hosts.forEach((h, i) => f.sshHost(`hosts[${i}]`, h));
      (news.spares ?? []).forEach((h, i) => f.sshHost(`spares[${i}]`, h));
      if (!news.privateKey)
        f.add("privateKey", `required with substrate "${ssh}": the private key's content (pass it as a secret)`);
      if (news.spares?.length && news.replicas === 1)
        f.add(
          "spares",
          "spares are for the quorum keeper of a 3, 5 or 7 replica controller; give them together with replicas: 3",
        );
      if (news.adminPassword && !news.adopt)
        f.add(
          "adminPassword",
          `${withArticle(ssh)} controller makes its own admin password (an output); give one only with adopt: true`,
        );
    }
    for (const kind of CLOUD_KINDS) {
      if (news.substrate === kind) news = checkCloud(f, news, kind);
      else
        for (const field of [kind, credentialArg(kind)] as const)
          if (news[field]) f.add(field, `only for substrate "${kind}"`);
    }
    if (typeof olds.replicas === "number" && typeof news.replicas === "number" && news.replicas < olds.replicas) {
      f.add(
        "replicas",
        `shrinking from ${olds.replicas} to ${news.replicas} replicas is not supported; a controller only grows`,
      );
    }
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: ControllerOutputs, news: ControllerInputs) {
    const replaces: string[] = [];
    if (olds.name !== news.name) replaces.push("name");
    if (olds.substrate !== news.substrate) replaces.push("substrate");
    if ((olds.dataDir ?? "") !== (news.dataDir ?? "")) replaces.push("dataDir");
    if ((olds.port ?? 0) !== (news.port ?? 0)) replaces.push("port");
    if (olds.substrate === BY_ADDRESS_KIND && olds.hosts?.[0]?.host !== news.hosts?.[0]?.host) replaces.push("hosts");
    // Its instances are where the contract's `locatedBy` settings say (a region and endpoint, a vCenter
    // and datacenter: where delete looks for them): elsewhere is another controller.
    const cloud = CLOUD_KINDS.find((k) => k === olds.substrate);
    if (cloud) {
      const [was, is] = [settingsOf(olds, cloud), settingsOf(news, cloud)];
      if ((contractOf(cloud).locatedBy ?? []).some((s: string) => was?.[s] !== is?.[s])) replaces.push(cloud);
    }
    const changes =
      replaces.length > 0 ||
      olds.replicas !== news.replicas ||
      !sameValue(olds.spares ?? [], news.spares ?? []) ||
      !sameValue(olds.hosts ?? [], news.hosts ?? []) ||
      olds.replaceAfterSeconds !== news.replaceAfterSeconds ||
      olds.maxReplacementsPerHour !== news.maxReplacementsPerHour ||
      olds.privateKey !== news.privateKey ||
      olds.timeoutSeconds !== news.timeoutSeconds ||
      CLOUD_KINDS.some(
        (k) => !sameValue(olds[k], news[k]) || !sameValue(olds[credentialArg(k)], news[credentialArg(k)]),
      ) ||
      olds.credentialName !== news.credentialName;
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: ControllerInputs) {
    const started = await firstReplica(inputs);
    const client = started.client;
    try {
      const id = started.uuid;
      try {
        await grow(client, inputs, 1);
        return { id, outs: await observe(client, inputs, started) };
      } catch (e) {
        // The first replica exists: record it, so the next up grows it rather than installing again.
        throw new PartialFailure(
          id,
          await observe(client, inputs, started).catch(() => plain({ ...inputs, ...started.facts })),
          [(e as Error).message],
        );
      }
    } finally {
      client.close();
    }
  },

  async read(id: string, props: ControllerOutputs) {
    const client = connect(props.connection);
    try {
      const info = await client.controllerInfo().catch((e: unknown) => {
        if (props.substrate === ON_HOST_KIND) return undefined;
        throw e;
      });
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
      const cloud = cloudOf(news);
      if (
        cloud &&
        (!sameValue(olds[cloud], news[cloud]) ||
          !sameValue(olds[credentialArg(cloud)], news[credentialArg(cloud)]) ||
          olds.credentialName !== news.credentialName)
      ) {
        await handOverCloud(client, news);
      }
      await grow(client, news, olds.replicas, olds.spares ?? []);
      return {
        outs: await observe(client, news, { uuid: olds.uuid, caCert: olds.caCert, adminPassword: olds.adminPassword }),
      };
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
    // Its replicas (those the keeper launched too) and whatever machines a model left: all marked with its UUID.
    const target = { uuid: props.uuid, ...(cloudOf(props) ? { credential: attributesOf(props) } : {}) };
    const { kind, settings } = hostingOf(props, "every host");
    await destroyController(kind, { ...target, settings }, { progress: () => undefined });
  },
};

interface Started {
  client: ControllerClient;
  uuid: string;
  caCert: string;
  adminPassword: string;
  facts?: Record<string, unknown>;
}

const dataDirOf = (i: ControllerInputs): string => i.dataDir ?? join(homedir(), ".steward", "pulumi", i.name);

function connect(c: ControllerConnection): ControllerClient {
  return new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: c.user, password: c.password });
}

/**
 * Where the Controller's arguments say it runs, as the substrates' hosting kind (named as the
 * substrate) and settings: over SSH the bootstrap installs on the first host (grow() takes the
 * others), and delete uninstalls from every host and spare.
 */
function hostingOf(
  i: ControllerInputs,
  hosts: "first host" | "every host",
): { kind: HostingKind; settings: HostingSettings[HostingKind] } {
  const privateKey = i.privateKey ?? "";
  const sshTarget = (h: SshHost) => ({
    host: h.host,
    port: h.port ?? 22,
    user: h.user ?? "root",
    privateKey,
    ...(h.hostKey ? { hostKey: h.hostKey } : {}),
  });
  const settings =
    i.substrate === ON_HOST_KIND
      ? { dataDir: dataDirOf(i), host: "127.0.0.1" }
      : i.substrate === BY_ADDRESS_KIND
        ? {
            hosts: (hosts === "first host"
              ? (i.hosts ?? []).slice(0, 1)
              : [...(i.hosts ?? []), ...(i.spares ?? [])]
            ).map(sshTarget),
          }
        : settingsOf(i, i.substrate);
  return { kind: i.substrate, settings: settings as unknown as HostingSettings[HostingKind] };
}

/** A place holding a controller already is taken over only with `adopt` and its password. */
function existing(i: ControllerInputs): HostingOptions["existing"] {
  return (where) =>
    new Error(
      i.substrate === ON_HOST_KIND
        ? `${where} already holds a controller: set adopt: true and its adminPassword to take it over, or choose another dataDir`
        : `${where} already runs a controller: set adopt: true and its adminPassword to take it over`,
    );
}

/** The first replica, by the substrates' bootstrap flow; the provider grows it itself (grow: hosts, spares, keeper settings). */
async function firstReplica(i: ControllerInputs): Promise<Started> {
  const { kind, settings } = hostingOf(i, "first host");
  const plan: ControllerPlan<HostingSettings[HostingKind]> = {
    name: i.name,
    settings,
    replicas: 1,
    timeoutMs: i.timeoutSeconds * 1000,
    ...(i.port !== undefined ? { port: i.port } : {}),
    ...(i.adminPassword ? { adminPassword: i.adminPassword } : {}),
    adopt: i.adopt,
    ...(cloudOf(i) ? { credential: { name: credentialNameOf(i), attributes: attributesOf(i) } } : {}),
  };
  const c = await bootstrapController(kind, plan, { progress: () => undefined, existing: existing(i) });
  return {
    client: new ControllerClient({
      addresses: c.addresses,
      caCert: c.caCert,
      user: "admin",
      password: c.adminPassword,
    }),
    uuid: c.uuid,
    caCert: c.caCert,
    adminPassword: c.adminPassword,
  };
}

/** A cloud's settings: the argument named after it (aws, vsphere). */
const settingsOf = (i: Partial<ControllerInputs>, kind: InstanceCloudSubstrate): Record<string, unknown> | undefined =>
  i[kind] as Record<string, unknown> | undefined;

/** A cloud controller's arguments: its settings by the contract's schema, its credential by the contract's attributes. */
function checkCloud(f: Failures, news: ControllerInputs, kind: InstanceCloudSubstrate): ControllerInputs {
  const contract = contractOf(kind);
  const field = credentialArg(kind);
  const settings = settingsOf(news, kind);
  if (!settings) f.add(kind, `required with substrate "${kind}": ${contract.settings?.hint ?? "its settings"}`);
  else if (!isUnknown(settings)) {
    const parsed = schemas().settingsSchemaOf(kind)!.safeParse(settings);
    if (!parsed.success) f.add(kind, schemas().describeIssues(parsed.error.issues));
    else news = { ...news, [kind]: parsed.data };
  }
  const key = news[field] as Record<string, unknown> | undefined;
  const required = requiredCredentialFields(kind);
  if (!key)
    f.add(
      field,
      `required with substrate "${kind}": ${contract.words.credential ?? "its credential"} (${required.join(", ")}; pass it as a secret)`,
    );
  else if (!isUnknown(key) && required.some((k) => !key[k])) f.add(field, `needs ${required.join(" and ")}`);
  if (news.credentialName !== undefined) f.name("credentialName", news.credentialName, "credential name");
  const ssh = BY_ADDRESS_KIND;
  if (news.hosts?.length)
    f.add("hosts", `only for substrate "${ssh}": on ${kind} the controller launches its ${contract.words.things}`);
  if (news.spares?.length)
    f.add(
      "spares",
      `only for substrate "${ssh}": on ${kind} the controller launches replacement ${contract.words.things} itself`,
    );
  if (news.adminPassword)
    f.add("adminPassword", `${withArticle(kind)} controller makes its own admin password (an output)`);
  return news;
}

const cloudOf = (i: ControllerInputs): InstanceCloudSubstrate | undefined => CLOUD_KINDS.find((k) => k === i.substrate);

/** The credential's attributes as the controller stores them. */
const attributesOf = (i: ControllerInputs): Record<string, string> =>
  credentialAttributes(i.substrate, i[credentialArg(cloudOf(i)!)] ?? {});
const credentialNameOf = (i: ControllerInputs): string => i.credentialName ?? i.substrate;

/** The credential or placement changed: the stored credential and the replica cloud follow. */
async function handOverCloud(client: ControllerClient, i: ControllerInputs): Promise<void> {
  const credential = credentialNameOf(i);
  const substrate = cloudOf(i)!;
  const replicaCloud = { substrate, credential, settings: settingsOf(i, substrate) } as ReplicaCloudSetting;
  await handOverReplicaCloud(
    client,
    { credential: { name: credential, substrate, attributes: attributesOf(i) }, replicaCloud },
    () => undefined,
    true,
  );
}

const spareOf = (h: SshHost, privateKey: string): SpareHost => ({
  host: h.host,
  port: h.port ?? 22,
  user: h.user ?? "root",
  privateKey,
  hostKey: h.hostKey,
});

/** Grows to `replicas` (enable-ha), hands new spares to the keeper and applies its settings. */
async function grow(
  client: ControllerClient,
  i: ControllerInputs,
  had: number,
  hadSpares: SshHost[] = [],
): Promise<void> {
  if (i.substrate === ON_HOST_KIND) return;
  const key = i.privateKey ?? "";
  const newSpares = (i.spares ?? []).filter((h) => !hadSpares.some((o) => o.host === h.host));
  const settings = {
    ...(i.replaceAfterSeconds ? { replaceAfterSeconds: i.replaceAfterSeconds } : {}),
    ...(i.maxReplacementsPerHour !== undefined ? { maxReplacementsPerHour: i.maxReplacementsPerHour } : {}),
  };
  if (i.replicas > had) {
    const info = await client.controllerInfo();
    // Hosts replicas run on already (on the embedded store the only replica has no member record).
    const used = new Set([
      ...info.cluster.members.map((m) => m.host),
      ...info.replicas.flatMap((r) => r.addresses.map((a) => splitAddress(a)[0])),
    ]);
    const hosts = (i.hosts ?? [])
      .slice(0, i.replicas)
      .filter((h) => !used.has(h.host))
      .map((h) => spareOf(h, key));
    await client.enableHa({ replicas: i.replicas, hosts, ...settings });
    await waitForVoters(client, i.replicas, i.timeoutSeconds * 1000);
  } else if (i.replicas > 1 && Object.keys(settings).length > 0) {
    await client.enableHa({ replicas: i.replicas, ...settings });
  }
  if (newSpares.length > 0) await client.addSpares(newSpares.map((h) => spareOf(h, key)));
}

async function observe(
  client: ControllerClient,
  i: ControllerInputs,
  s: Pick<Started, "uuid" | "caCert" | "adminPassword">,
): Promise<ControllerOutputs> {
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
    members:
      c.store === "etcd"
        ? c.members
            .filter((m) => m.state !== "removed")
            .map((m) => ({ name: m.name, host: m.host, hasVote: m.hasVote, present: m.present, leader: m.leader }))
        : info.replicas.map((r) => ({
            name: r.id,
            host: r.addresses[0]?.split(":")[0] ?? "",
            hasVote: true,
            present: true,
            leader: r.leader,
          })),
    leader: info.replicas.find((r) => r.leader)?.id ?? "",
  });
}

function inputsOf(o: ControllerOutputs): ControllerInputs {
  const { connection: _c, uuid: _u, addresses: _a, caCert: _k, members: _m, leader: _l, ...inputs } = o;
  return inputs;
}
