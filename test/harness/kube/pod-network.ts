/**
 * The fake kubelet's pod network: one bridge with no uplink and no default route, and per pod a
 * network namespace joined to it by a veth pair, with its own IP (as a CNI plugin gives each pod).
 * The bridge's address is this machine's side: a controller listening on it is reachable from pods.
 * Needs root and iproute2. Only these addresses are ever dialled.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { addNamespaceOnBridge } from "../hosts";

const run = promisify(execFile);

/** Pod subnets come from 10.232.0.0/16 (the SSH test labs use 10.231.0.0/16). */
async function freePodSubnet(): Promise<string> {
  const used = (await run("ip", ["-4", "-o", "addr", "show"])).stdout;
  for (let i = 0; i < 50; i++) {
    const candidate = `10.232.${Math.floor(Math.random() * 250) + 1}`;
    if (!used.includes(` ${candidate}.`)) return candidate;
  }
  throw new Error("no free pod subnet in 10.232.0.0/16");
}

export class PodNetwork {
  private next = 10;
  private readonly free: number[] = [];

  private constructor(
    readonly id: string,
    readonly subnet: string,
  ) {}

  /** The bridge's address: where pods reach this machine (a controller listening here). */
  get gateway(): string {
    return `${this.subnet}.1`;
  }
  private get bridge(): string {
    return `${this.id}br`;
  }

  static async create(): Promise<PodNetwork> {
    if (process.getuid?.() !== 0) throw new Error("the process kubelet needs root (network and mount namespaces)");
    for (let attempt = 0; ; attempt++) {
      const net = new PodNetwork(`sk${randomBytes(2).toString("hex")}`, await freePodSubnet());
      await run("ip", ["link", "add", net.bridge, "type", "bridge"]);
      // A bridge without an address of its own takes its ports' lowest MAC, so deleting a pod could
      // change the gateway's MAC under the other pods' ARP caches (cut off until their entries expire).
      await run("ip", [
        "link",
        "set",
        net.bridge,
        "address",
        `02:${Array.from(randomBytes(5), (b) => b.toString(16).padStart(2, "0")).join(":")}`,
      ]);
      await run("ip", ["addr", "add", `${net.gateway}/24`, "dev", net.bridge]);
      // Kubelets starting at once (here or in another test process) may pick the same subnet: the later ones try another.
      const holders = (await run("ip", ["-4", "-o", "addr", "show"])).stdout
        .split("\n")
        .filter((l) => l.includes(` ${net.subnet}.`));
      if (holders.length === 1 || attempt >= 5) {
        await run("ip", ["link", "set", net.bridge, "up"]);
        return net;
      }
      await run("ip", ["link", "del", net.bridge]).catch(() => undefined);
      await new Promise((r) => setTimeout(r, Math.random() * 50));
    }
  }

  /** A namespace for one pod, with its IP; `release` when the pod is gone. */
  async attach(): Promise<{ netns: string; ip: string; release: () => Promise<void> }> {
    // Round robin, as CNI's host-local IPAM allocates (the address after the last one given), so a
    // recreated pod gets a new IP as it usually does in a cluster; freed addresses only once the range is used up.
    const n = this.next <= 250 ? this.next++ : this.free.shift();
    if (n === undefined) throw new Error("the fake kubelet's pod network is full (240 pods)");
    const netns = `${this.id}-p${n}`,
      hv = `${this.id}h${n}`,
      pv = `${this.id}p${n}`;
    const ip = `${this.subnet}.${n}`;
    await addNamespaceOnBridge({ netns, ip, bridge: this.bridge, hostVeth: hv, peerVeth: pv });
    return {
      netns,
      ip,
      release: async () => {
        await run("ip", ["netns", "del", netns]).catch(() => undefined);
        this.free.push(n);
      },
    };
  }

  async close(): Promise<void> {
    const namespaces = (await run("ip", ["netns", "list"])).stdout;
    for (const line of namespaces.split("\n")) {
      const name = line.split(" ")[0];
      if (name?.startsWith(`${this.id}-p`)) await run("ip", ["netns", "del", name]).catch(() => undefined);
    }
    await run("ip", ["link", "del", this.bridge]).catch(() => undefined);
  }
}
