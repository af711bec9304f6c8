/**
 * A replica whose host came back with a new address (a DHCP lease, a VM moved or re-cabled): before
 * its etcd member starts, the replica finds the address it has now, issues itself a certificate for
 * it from the controller CA (every replica holds the CA key) and rewrites its configuration. Once
 * its store is open, {@link publishPeerAddress} tells the cluster the member's new peer URL.
 *
 * This works because etcd carries raft traffic over connections the moved member dials itself (the
 * others' addresses have not changed), so the member reaches quorum before anyone can dial it back.
 * Agents and clients learn the new API address from the replica's presence record, as for any change.
 */
import { createSocket } from "node:dgram";
import { readFile, rename, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import type { Logger } from "../../api";
import { StewardError, splitAddress } from "../../api";
import type { ControllerConfig } from "../config";
import { dataFiles } from "../config";
import type { Store } from "../store";
import type { EtcdMembership } from "../store/etcd";
import type { MemberDoc } from "../state";
import { clusterKeys, decode, docs } from "../state";
import { bracket, peerUrl } from "./etcd-member";

/** This host's own addresses (not loopback, not link-local) of one IP family, on links that are up. */
function localAddresses(family: 4 | 6): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal || (family === 4 ? a.family !== "IPv4" : a.family !== "IPv6") || a.address.startsWith("fe80:"))
        continue;
      out.push(a.address);
    }
  }
  return out;
}

/** The source address the kernel would use towards `peer` (a UDP connect sends nothing). */
function sourceAddressTowards(peer: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s = createSocket(isIP(peer) === 6 ? "udp6" : "udp4");
    s.on("error", () => {
      s.close();
      resolve(undefined);
    });
    s.connect(9, peer, () => {
      const { address } = s.address();
      s.close();
      resolve(address);
    });
  });
}

/** The address this replica has now, or undefined when its configured one is still its own. */
export async function currentAddress(config: ControllerConfig): Promise<string | undefined> {
  const member = config.member;
  if (!member || !isIP(member.host)) return undefined; // a DNS name follows the host by itself
  const family = isIP(member.host) as 4 | 6;
  const mine = localAddresses(family);
  // No address at all: the network is not up yet (or the link has no carrier); nothing to go by.
  if (mine.length === 0 || mine.includes(member.host)) return undefined;
  if (mine.length === 1) return mine[0];
  // Several addresses: the one this host uses to reach its peers.
  const peers = member.initialCluster
    .split(",")
    .map((e) => new URL(e.slice(e.indexOf("=") + 1)).hostname.replace(/^\[|\]$/g, ""))
    .filter((h) => h !== member.host);
  for (const p of peers) {
    const src = await sourceAddressTowards(p);
    if (src && mine.includes(src)) return src;
  }
  throw new StewardError(
    "unavailable",
    `this replica was configured for ${member.host}, which is no longer an address of this host (it has ${mine.join(", ")}), and none of them reaches its peers: set member.host and advertise in ${dataFiles.config}`,
    { reason: "address-gone" },
  );
}

/**
 * Moves this replica's configuration and certificate to `address`; returns the new configuration.
 * The old certificate and configuration are replaced atomically (a crash leaves one or the other).
 */
export async function moveToAddress(
  dataDir: string,
  config: ControllerConfig,
  address: string,
  log: Logger,
): Promise<ControllerConfig> {
  const member = config.member!;
  const old = member.host;
  // eslint-disable-next-line @typescript-eslint/consistent-type-imports
  const { issueServerCertificate } = require("../security/pki") as typeof import("../security/pki");
  const file = (f: string): string => join(dataDir, f);
  const [caCert, caKey] = await Promise.all([dataFiles.caCert, dataFiles.caKey].map((f) => readFile(file(f), "utf8")));
  const cert = await issueServerCertificate({ certPem: caCert!, keyPem: caKey! }, [address]);
  const moved = (a: string): string => {
    const [host, port] = splitAddress(a);
    return host === old ? `${bracket(address)}:${port}` : a;
  };
  const next: ControllerConfig = {
    ...config,
    ...(config.advertise ? { advertise: config.advertise.map(moved) } : {}),
    member: { ...member, host: address },
  };
  await writeAtomically(file(dataFiles.serverKey), cert.keyPem, 0o600);
  await writeAtomically(file(dataFiles.serverCert), cert.certPem, 0o644);
  await writeAtomically(file(dataFiles.config), JSON.stringify(next, null, 2) + "\n", 0o600);
  log.warn("this host's address changed: the replica moved to its new address", {
    from: old,
    to: address,
    replica: member.name,
  });
  return next;
}

async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  await writeFile(`${path}.new`, content, { mode });
  await rename(`${path}.new`, path);
}

/**
 * Makes the cluster's record of this member match its configuration: etcd's peer URL (what the
 * other members dial) and the member document (what show-controller and the keeper read).
 */
export async function publishPeerAddress(
  store: Store,
  membership: EtcdMembership,
  config: ControllerConfig,
  log: Logger,
): Promise<void> {
  const member = config.member!;
  const url = peerUrl(member.host, member.peerPort);
  const self = (await membership.list()).find((m) => m.name === member.name);
  if (self && !self.peerUrls.includes(url)) {
    await membership.updatePeerUrls(self.id, [url]);
    log.info("told the cluster this member's new peer address", { replica: member.name, peerUrl: url });
  }
  const kv = await store.get(clusterKeys.member(member.name));
  if (kv) {
    const doc = decode(docs.clusterMember, kv.value);
    if (doc.host !== member.host && doc.state !== "removed")
      await store.put(
        clusterKeys.member(member.name),
        JSON.stringify({ ...doc, host: member.host } satisfies MemberDoc),
      );
  }
}
