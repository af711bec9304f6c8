/**
 * Test hosts: each one a network namespace joined by veth to a bridge that has no uplink and no
 * default route, running its own sshd (own host key) as the child of PID 1 in its own PID, UTS and
 * mount namespaces, with private /opt/steward, /var/lib/steward, /etc/steward, /srv, /dev/disk and /tmp, so
 * what an installer writes on one host is invisible on another. Killing a host kills everything in it;
 * cutting its link is a partition; restarting it is a reboot (same disks, same host key). A disk
 * plugged into a host ({@link TestHost.plugDisk}) is a loop device over a sparse file, named in that
 * host's /dev/disk/by-id as a cloud's volume would be on its instance.
 *
 * Needs root, iproute2, util-linux and openssh-server (test/harness/setup-host.sh installs them).
 * Only these hosts' addresses are ever dialled.
 */
import { execFile, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, readdir, readlink, rm, stat, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { ControllerClient } from "../../api";
import { eventually } from "./eventually";

const run = promisify(execFile);
const sh = async (cmd: string): Promise<string> => (await run("sh", ["-c", cmd])).stdout;

/** Where labs keep their files: root-owned, as sshd's StrictModes wants for authorized keys. */
const LAB_ROOT = "/var/lib/steward-test-lab";
/** The user with passwordless sudo used to test non-root installs. */
export const SUDO_USER = "stwdeploy";

export interface TestHostOptions {
  noNode?: boolean;
}

/** A disk plugged into a test host: the loop device, the file behind it and its names in /dev/disk/by-id. */
export interface PluggedDisk {
  loop: string;
  file: string;
  byId: string[];
}

export class TestHost {
  private proc?: ChildProcess;
  /** Disks plugged in, by loop device. */
  readonly disks = new Map<string, PluggedDisk>();
  constructor(
    readonly lab: TestLab,
    readonly index: number,
    readonly name: string,
    /** Changes with {@link readdress}. */
    public ip: string,
    readonly dir: string,
    /** Changes with {@link setSshIdentity}. */
    public hostKeyFingerprint: string,
    private readonly opts: TestHostOptions,
  ) {}

  get netns(): string {
    return `${this.lab.id}-h${this.index}`;
  }
  private get hostVeth(): string {
    return `${this.lab.id}v${this.index}`;
  }

  /** Boots the host: its namespaces, sshd, and the services its boot directory lists. */
  async start(): Promise<void> {
    const init = join(this.dir, "init.sh");
    this.proc = spawn(
      "ip",
      [
        "netns",
        "exec",
        this.netns,
        "unshare",
        "--uts",
        "--mount",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "--propagation",
        "private",
        "/bin/sh",
        init,
      ],
      { stdio: ["ignore", "ignore", "ignore"] },
    );
    this.proc.on("error", () => undefined);
    // Ready when sshd answers on port 22 inside the namespace.
    for (let i = 0; i < 100; i++) {
      if (await portOpen(this.ip, 22)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`test host ${this.name} did not start sshd; see ${join(this.dir, "sshd.log")}`);
  }

  /** Kills everything on the host at once, as pulling the power would. */
  async kill(): Promise<void> {
    // A host killed before has a signal code, not an exit code: waiting for its exit would hang.
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const done = new Promise((r) => this.proc!.once("exit", r));
    this.proc.kill("SIGKILL"); // --kill-child takes PID 1 of the host, and with it every process there
    await done;
    // PID 1's children die with it; wait until none is left holding the mounts.
    for (let i = 0; i < 100 && (await this.processes()).length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  /** Powers the host off, gives it another address (as a new DHCP lease would) and boots it. */
  async readdress(ip: string): Promise<void> {
    await this.kill();
    await run("ip", ["-n", this.netns, "addr", "flush", "dev", "eth0"]);
    await run("ip", ["-n", this.netns, "addr", "add", `${ip}/24`, "dev", "eth0"]);
    const config = join(this.dir, "sshd_config");
    await writeFile(
      config,
      (await readFile(config, "utf8")).replace(`ListenAddress ${this.ip}`, `ListenAddress ${ip}`),
    );
    this.ip = ip;
    await this.start();
  }
  async cut(): Promise<void> {
    await run("ip", ["link", "set", this.hostVeth, "down"]);
  }
  async restore(): Promise<void> {
    await run("ip", ["link", "set", this.hostVeth, "up"]);
  }

  /** Runs a shell command inside the host (all its namespaces), for assertions. */
  async exec(cmd: string): Promise<{ code: number; stdout: string }> {
    const pid1 = await this.pid1();
    return run("nsenter", ["-t", String(pid1), "-n", "-m", "-u", "-p", "sh", "-c", cmd]).then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (e: { code?: number; stdout?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? "" }),
    );
  }

  private async pid1(): Promise<number> {
    const children = (
      await readFile(`/proc/${this.proc!.pid}/task/${this.proc!.pid}/children`, "utf8").catch(() => "")
    ).trim();
    // ip netns exec → unshare → (fork) PID 1 of the host
    const unsharePid = Number(children.split(" ")[0] || this.proc!.pid);
    const grand = (await readFile(`/proc/${unsharePid}/task/${unsharePid}/children`, "utf8").catch(() => "")).trim();
    return Number(grand.split(" ")[0] || unsharePid);
  }

  /** Host PIDs of processes running in this host's network namespace. */
  async processes(): Promise<number[]> {
    const out = await run("ip", ["netns", "pids", this.netns]).then(
      (r) => r.stdout,
      () => "",
    );
    return out.split("\n").filter(Boolean).map(Number);
  }

  get noNode(): boolean {
    return this.opts.noNode === true;
  }

  /** The host's private /dev/disk, as a directory of the lab. */
  get devDiskDir(): string {
    return join(this.dir, "dev-disk");
  }

  /**
   * Plugs a disk into the host: a sparse file of `sizeMiB` (or `o.file` as it is, when it exists:
   * a volume that moves between hosts keeps its data) on a loop device, named `byIdNames` in the
   * host's /dev/disk/by-id. Loop devices are the machine's, so the node is `/dev/loopN` everywhere.
   */
  async plugDisk(
    sizeMiB: number,
    byIdNames: string[],
    o: { file?: string } = {},
  ): Promise<{ loop: string; file: string }> {
    const file = o.file ?? join(this.lab.dir, "disks", `${this.name}-${randomBytes(4).toString("hex")}.img`);
    await mkdir(join(file, ".."), { recursive: true, mode: 0o700 });
    if (!(await stat(file).catch(() => undefined))) await run("truncate", ["-s", `${sizeMiB}M`, file]);
    const loop = (await run("losetup", ["-f", "--show", file])).stdout.trim();
    const byId = join(this.devDiskDir, "by-id");
    await mkdir(byId, { recursive: true, mode: 0o755 });
    for (const name of byIdNames) {
      await rm(join(byId, name), { force: true });
      await symlink(loop, join(byId, name));
    }
    this.disks.set(loop, { loop, file, byId: byIdNames });
    return { loop, file };
  }

  /**
   * Unplugs a disk: its by-id names go, and its loop device is detached once nothing in the host has
   * it mounted (`losetup -d` on a device in use detaches it when its last user lets go). Its file stays.
   */
  async unplugDisk(loop: string): Promise<void> {
    const disk = this.disks.get(loop);
    if (!disk) return;
    for (const name of disk.byId) {
      const link = join(this.devDiskDir, "by-id", name);
      if ((await readlink(link).catch(() => undefined)) === loop) await rm(link, { force: true });
    }
    this.disks.delete(loop);
    await run("losetup", ["-d", loop]).catch(() => undefined);
  }

  /**
   * What cloud-init's ssh module does before sshd starts (test/harness/cloud-init.ts): another
   * ed25519 host key and keys authorized for this host's users (on top of the lab's client key).
   * A new host key takes effect by rebooting the host, sshd's first start on a real instance.
   */
  async setSshIdentity(o: {
    hostKey?: { privateKey: string; publicKey: string };
    authorizedKeys?: Record<string, string[]>;
  }): Promise<void> {
    for (const [user, keys] of Object.entries(o.authorizedKeys ?? {})) {
      await mkdir(join(this.dir, "authorized_keys"), { recursive: true, mode: 0o755 });
      await writeFile(join(this.dir, "authorized_keys", user), keys.map((k) => k.trim() + "\n").join(""), {
        mode: 0o644,
      });
    }
    if (!o.hostKey) return;
    const blob = o.hostKey.publicKey.trim().split(/\s+/)[1];
    if (!o.hostKey.publicKey.startsWith("ssh-ed25519 ") || !blob)
      throw new Error("setSshIdentity: only an ssh-ed25519 host key is supported");
    await writeFile(join(this.dir, "ssh_host_ed25519_key"), o.hostKey.privateKey.trim() + "\n", { mode: 0o600 });
    await writeFile(join(this.dir, "ssh_host_ed25519_key.pub"), o.hostKey.publicKey.trim() + "\n", { mode: 0o644 });
    this.hostKeyFingerprint =
      "SHA256:" + createHash("sha256").update(Buffer.from(blob, "base64")).digest("base64").replace(/=+$/, "");
    await this.restart();
  }
}

export class TestLab {
  readonly hosts: TestHost[] = [];
  private nextIndex = 1;
  /** Key pair accepted for root and for the sudo user on every host. */
  clientKey = "";
  clientPublicKey = "";

  protected constructor(
    readonly id: string,
    readonly subnet: string,
    readonly dir: string,
  ) {}

  get bridge(): string {
    return `${this.id}br`;
  }

  /** Creates `n` hosts; `opts(i)` chooses per-host options (e.g. no Node.js). */
  static async create(n: number, opts: (i: number) => TestHostOptions = () => ({})): Promise<TestLab> {
    if (process.getuid?.() !== 0) throw new Error("test hosts need root (network namespaces, sshd)");
    await pruneStaleLabs();
    const id = `st${randomBytes(2).toString("hex")}`;
    const subnet = await freeSubnet();
    const lab = new TestLab(id, subnet, join(LAB_ROOT, id));
    try {
      await lab.prepare();
      await Promise.all(Array.from({ length: n }, (_, i) => lab.addHost(opts(i))));
      lab.hosts.sort((a, b) => a.index - b.index); // host i+1 is hosts[i], whatever order they came up in
    } catch (err) {
      await lab.close();
      throw err;
    }
    return lab;
  }

  private async prepare(): Promise<void> {
    await mkdir(join(this.dir, "keys"), { recursive: true, mode: 0o755 });
    await chmod(LAB_ROOT, 0o755);
    // /dev/disk: where each host's private one is mounted (this machine has no udev to make one).
    for (const d of ["/run/sshd", "/opt/steward", "/var/lib/steward", "/etc/steward", "/dev/disk", "/srv"])
      await mkdir(d, { recursive: true });
    await run("ssh-keygen", [
      "-q",
      "-t",
      "ed25519",
      "-N",
      "",
      "-C",
      "steward-test",
      "-f",
      join(this.dir, "client_key"),
    ]);
    this.clientKey = await readFile(join(this.dir, "client_key"), "utf8");
    this.clientPublicKey = await readFile(join(this.dir, "client_key.pub"), "utf8");
    // "*": no password, but not locked ("!"), which sshd refuses without PAM.
    await sh(`id ${SUDO_USER} >/dev/null 2>&1 || useradd -m -s /bin/sh ${SUDO_USER}; usermod -p "*" ${SUDO_USER}`);
    await writeFile(`/etc/sudoers.d/${SUDO_USER}`, `${SUDO_USER} ALL=(ALL) NOPASSWD: ALL\n`, { mode: 0o440 });
    for (const user of ["root", SUDO_USER])
      await writeFile(join(this.dir, "keys", user), this.clientPublicKey, { mode: 0o644 });
    await run("ip", ["link", "add", this.bridge, "type", "bridge"]);
    // A bridge without a MAC of its own takes its ports' lowest, so killing a host could change the
    // gateway's MAC under the other hosts' ARP caches (cut off from this machine until those expire).
    await run("ip", [
      "link",
      "set",
      this.bridge,
      "address",
      `02:${Array.from(randomBytes(5), (b) => b.toString(16).padStart(2, "0")).join(":")}`,
    ]);
    await run("ip", ["addr", "add", `${this.subnet}.1/24`, "dev", this.bridge]);
    await run("ip", ["link", "set", this.bridge, "up"]);
  }

  async addHost(opts: TestHostOptions = {}): Promise<TestHost> {
    const index = this.nextIndex++;
    const name = `host-${index}`;
    const ip = `${this.subnet}.${10 + index}`;
    const dir = join(this.dir, name);
    for (const d of ["opt", "var", "etc", "etc/boot.d", "srv", "dev-disk/by-id"])
      await mkdir(join(dir, d), { recursive: true, mode: 0o755 });
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "ssh_host_ed25519_key")]);
    const pub = (await readFile(join(dir, "ssh_host_ed25519_key.pub"), "utf8")).split(" ")[1]!;
    const fingerprint =
      "SHA256:" + createHash("sha256").update(Buffer.from(pub, "base64")).digest("base64").replace(/=+$/, "");
    await writeFile(
      join(dir, "sshd_config"),
      [
        "Port 22",
        `ListenAddress ${ip}`,
        `HostKey ${join(dir, "ssh_host_ed25519_key")}`,
        `PidFile ${join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${join(this.dir, "keys", "%u")} ${join(dir, "authorized_keys", "%u")}`,
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "Subsystem sftp /usr/lib/openssh/sftp-server",
        "",
      ].join("\n"),
    );
    if (opts.noNode)
      await writeFile(join(dir, "no-node"), "#!/bin/sh\necho 'node: not installed on this host' >&2\nexit 127\n", {
        mode: 0o755,
      });
    await writeFile(
      join(dir, "init.sh"),
      [
        "#!/bin/sh",
        `hostname ${name}`,
        `mount --bind ${join(dir, "opt")} /opt/steward`,
        `mount --bind ${join(dir, "var")} /var/lib/steward`,
        `mount --bind ${join(dir, "etc")} /etc/steward`,
        `mount --bind ${join(dir, "dev-disk")} /dev/disk`,
        // Where operators put their storage (notebook: /srv/notebook): a host's own, as a machine's disk is.
        `mount --bind ${join(dir, "srv")} /srv`,
        "mount -t tmpfs tmpfs /tmp",
        // /run starts empty at every boot, as on a real host (agents tell reboots by it).
        "mount -t tmpfs tmpfs /run",
        "mkdir -p /run/sshd",
        ...(opts.noNode ? [`mount --bind ${join(dir, "no-node")} /usr/bin/node`] : []),
        // What the installer registered for boot on a host without systemd.
        'for f in /etc/steward/boot.d/*; do [ -x "$f" ] && setsid "$f" </dev/null >/dev/null 2>&1 & done',
        `/usr/sbin/sshd -D -e -f ${join(dir, "sshd_config")} 2>>${join(dir, "sshd.log")} &`,
        "while :; do wait; sleep 1; done",
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    await addNamespaceOnBridge({
      netns: `${this.id}-h${index}`,
      ip,
      bridge: this.bridge,
      hostVeth: `${this.id}v${index}`,
      peerVeth: `${this.id}n${index}`,
    });
    const host = new TestHost(this, index, name, ip, dir, fingerprint, opts);
    this.hosts.push(host);
    await host.start();
    return host;
  }

  /** How a controller reaches `host` over SSH: as root, with the lab's client key, its host key pinned. */
  sshTarget(host: TestHost): { host: string; user: string; privateKey: string; hostKey: string } {
    return { host: host.ip, user: "root", privateKey: this.clientKey, hostKey: host.hostKeyFingerprint };
  }

  /** Tears everything down, even after a failed test. */
  async close(): Promise<void> {
    for (const h of this.hosts) await h.kill().catch(() => undefined);
    // Killed hosts' mounts are gone with their namespaces: their loop devices can go.
    for (const h of this.hosts) for (const loop of [...h.disks.keys()]) await h.unplugDisk(loop).catch(() => undefined);
    for (const h of this.hosts) await run("ip", ["netns", "del", h.netns]).catch(() => undefined);
    await run("ip", ["link", "del", this.bridge]).catch(() => undefined);
    await removeDir(this.dir);
  }
}

/**
 * A network namespace joined to `bridge` by a veth pair: `eth0` inside with `ip`/24, loopback up,
 * no default route (nothing beyond the bridge is reachable). Test hosts and the fake kubelet's pods.
 */
export async function addNamespaceOnBridge(o: {
  netns: string;
  ip: string;
  bridge: string;
  hostVeth: string;
  peerVeth: string;
}): Promise<void> {
  await run("ip", ["netns", "add", o.netns]);
  await run("ip", ["link", "add", o.hostVeth, "type", "veth", "peer", "name", o.peerVeth]);
  await run("ip", ["link", "set", o.peerVeth, "netns", o.netns]);
  const inNs = (...args: string[]): Promise<unknown> => run("ip", ["netns", "exec", o.netns, "ip", ...args]);
  await inNs("link", "set", o.peerVeth, "name", "eth0");
  await inNs("addr", "add", `${o.ip}/24`, "dev", "eth0");
  await inNs("link", "set", "eth0", "up");
  await inNs("link", "set", "lo", "up");
  await run("ip", ["link", "set", o.hostVeth, "master", o.bridge, "up"]);
}

/** rm -r, retried: a process of a host that is just dying may still be writing its logs. */
async function removeDir(dir: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return await rm(dir, { recursive: true, force: true });
    } catch (err) {
      if (i >= 10) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * Removes what labs of killed runs left behind: directories whose namespaces are gone. Only old
 * ones: a lab being created right now has its directory a moment before its namespaces.
 */
async function pruneStaleLabs(): Promise<void> {
  const namespaces = await sh("ip netns list");
  for (const d of await readdir(LAB_ROOT).catch(() => [] as string[])) {
    if (!/^st[0-9a-f]{4}$/.test(d) || namespaces.includes(`${d}-h`)) continue;
    const age = Date.now() - (await stat(join(LAB_ROOT, d))).mtimeMs;
    if (age <= 600_000) continue;
    // Disks its hosts had plugged: loop devices over its files.
    for (const line of (await sh("losetup -a").catch(() => "")).split("\n"))
      if (line.includes(`${join(LAB_ROOT, d)}/`))
        await run("losetup", ["-d", line.split(":")[0]!]).catch(() => undefined);
    await removeDir(join(LAB_ROOT, d)).catch(() => undefined);
  }
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: 500 });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
    s.once("timeout", () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** A /24 in 10.231.0.0/16 that no interface on this machine uses yet. */
async function freeSubnet(): Promise<string> {
  const used = await sh("ip -4 -o addr show");
  for (let i = 0; i < 50; i++) {
    const candidate = `10.231.${Math.floor(Math.random() * 250) + 1}`;
    if (!used.includes(`${candidate}.`)) return candidate;
  }
  throw new Error("no free test subnet in 10.231.0.0/16");
}

/**
 * Waits until `host`, added to `model` as an SSH machine, has its agent installed and started, and
 * resolves with the machine's id; an install that failed fails the wait at once, naming its step.
 */
export function sshMachineStarted(
  client: Pick<ControllerClient, "listMachines">,
  model: string,
  host: TestHost,
  timeoutMs = 240_000,
): Promise<string> {
  return eventually(
    `${host.name} installed`,
    async () => {
      const m = (await client.listMachines(model)).find((x) => x.address === host.ip);
      if (m?.install?.state === "failed") throw new Error(`${host.name}: ${m.install.step}`);
      return m?.status === "started" ? m.id : undefined;
    },
    timeoutMs,
    250,
  );
}
