/**
 * A tiny subset of cloud-init for the test hosts (test/harness/hosts.ts), so that instances of the
 * fake EC2 (fake-ec2.ts) act on their user data as an Ubuntu/Debian cloud image would. Follows
 * cloud-init's documentation ("User data formats", modules "Write Files" and "Runcmd"):
 * - user data may be gzip-compressed; it must be `#cloud-config` YAML (cloud-init reads it with
 *   PyYAML, i.e. YAML 1.1: `!!binary`, octal `0644`); other formats (shell scripts, MIME
 *   multi-part, …) and keys other than `write_files` and `runcmd` are refused, not ignored, so a
 *   test cannot pass on user data this runner did not really apply;
 * - `write_files`: path, content, encoding (text/plain by default; b64, base64, gz, gzip, gz+b64,
 *   gz+base64, gzip+b64, gzip+base64), permissions (octal, default 0644), parent directories
 *   created; owner and defer are ignored (everything runs as root, at once);
 * - `runcmd`: as cloud-init does, every item becomes a line of one shell script (a string as it
 *   is, a list as single-quoted words), so `cd` and variables carry over from one item to the next;
 * - module "SSH": `ssh_keys` (ed25519_private and ed25519_public only; other types are refused),
 *   `ssh_deletekeys` (default true: the image's host keys go), `ssh_genkeytypes` (only what is
 *   already there, ed25519, or none), `ssh_authorized_keys` (the default user's; root's too when
 *   `disable_root` is false; with the default `disable_root: true` root gets none that log in).
 *   Applied before the instance answers as running ({@link fakeEc2Boot}) or the VM's address is
 *   reported (vcsim.ts), as cloud-init does before sshd starts ({@link bootCloudInit}).
 * Deviations: output goes to /var/lib/steward/cloud-init-output.log (per host; /var/log is the real
 * machine's), and the script stops at the first failing item, which fails the run (cloud-init would
 * run the later items and only report an error).
 */
import { dirname } from "node:path";
import { gunzipSync } from "node:zlib";
import { parse } from "yaml";
import type { FakeInstance } from "./fake-ec2";
import type { TestHost, TestLab } from "./hosts";
import { SUDO_USER } from "./hosts";

export const CLOUD_INIT_OUTPUT_LOG = "/var/lib/steward/cloud-init-output.log";
const RUNCMD_SCRIPT = "/var/lib/steward/cloud-init/runcmd";
/** Bytes of shell command per host.exec: argv strings are limited to 128 KiB on Linux. */
const EXEC_CHUNK = 64 * 1024;

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
const isGzip = (b: Uint8Array): boolean => b[0] === 0x1f && b[1] === 0x8b;

/** Applies `#cloud-config` user data on a test host: write_files, then runcmd. */
export async function runCloudInit(host: TestHost, userData: Buffer): Promise<void> {
  await (await bootCloudInit(host, userData)).rest();
}

/**
 * A first boot as cloud-init orders it ("Boot stages": the Network stage's cloud_init_modules, the
 * SSH module among them, run before sshd and logins start): the SSH module is applied now, and
 * the rest (write_files, runcmd) is returned to run in the background. A guest's address should be
 * made known only once this resolves: before, its sshd still has the image's host key. Bad user
 * data rejects here (nothing of it applied).
 */
export async function bootCloudInit(host: TestHost, userData: Buffer): Promise<{ rest: () => Promise<void> }> {
  const config = parseCloudConfig(userData);
  await applySshModule(host, config);
  return { rest: () => runFilesAndCommands(host, config) };
}

const SSH_MODULE_KEYS = ["ssh_keys", "ssh_deletekeys", "ssh_genkeytypes", "ssh_authorized_keys", "disable_root"];

/** The `#cloud-config` mapping, refusing what this runner does not implement. */
export function parseCloudConfig(userData: Buffer): Record<string, unknown> {
  const text = (isGzip(userData) ? gunzipSync(userData) : userData).toString("utf8");
  if (!text.startsWith("#cloud-config"))
    throw new Error(
      `unsupported user-data: only #cloud-config is supported here, got ${JSON.stringify(text.slice(0, 30))}`,
    );
  const config = (parse(text, { version: "1.1" }) ?? {}) as Record<string, unknown>;
  if (typeof config !== "object" || Array.isArray(config))
    throw new Error("unsupported user-data: #cloud-config is not a YAML mapping");
  const unknown = Object.keys(config).filter(
    (k) => k !== "write_files" && k !== "runcmd" && !SSH_MODULE_KEYS.includes(k),
  );
  if (unknown.length)
    throw new Error(
      `unsupported user-data: cloud-config keys ${unknown.join(", ")} are not implemented by the test runner`,
    );
  sshModule(config);
  return config;
}

/** The SSH module's settings, refusing what the test hosts cannot do. */
function sshModule(config: Record<string, unknown>): {
  hostKey?: { privateKey: string; publicKey: string };
  keys: string[];
} {
  const given = (config.ssh_keys ?? {}) as Record<string, unknown>;
  if (typeof given !== "object" || Array.isArray(given))
    throw new Error("unsupported user-data: ssh_keys must be a mapping");
  const other = Object.keys(given).filter((k) => k !== "ed25519_private" && k !== "ed25519_public");
  if (other.length)
    throw new Error(
      `unsupported user-data: ssh_keys ${other.join(", ")} are not implemented by the test runner (ed25519 only)`,
    );
  const genTypes = asList(config.ssh_genkeytypes, "ssh_genkeytypes");
  if (genTypes.some((t) => t !== "ed25519"))
    throw new Error(
      `unsupported user-data: ssh_genkeytypes ${JSON.stringify(genTypes)}: the test hosts have ed25519 keys only`,
    );
  const hasPrivate = typeof given.ed25519_private === "string";
  if (hasPrivate !== (typeof given.ed25519_public === "string"))
    throw new Error("unsupported user-data: ssh_keys needs both ed25519_private and ed25519_public");
  if (config.ssh_deletekeys === false && hasPrivate)
    throw new Error("unsupported user-data: ssh_keys with ssh_deletekeys false would leave two ed25519 host keys");
  const keys = asList(config.ssh_authorized_keys, "ssh_authorized_keys").map(String);
  return {
    keys,
    ...(hasPrivate
      ? { hostKey: { privateKey: given.ed25519_private as string, publicKey: given.ed25519_public as string } }
      : {}),
  };
}

/** cloud-init's SSH module on a test host: host keys, then authorized keys. */
export async function applySshModule(host: TestHost, config: Record<string, unknown>): Promise<void> {
  const { hostKey, keys } = sshModule(config);
  // The default user of the test hosts' "image" is the sudo user; root only when disable_root is false.
  const authorizedKeys: Record<string, string[]> = keys.length
    ? { [SUDO_USER]: keys, ...(config.disable_root === false ? { root: keys } : {}) }
    : {};
  await host.setSshIdentity({ authorizedKeys, ...(hostKey ? { hostKey } : {}) });
}

/** write_files, then runcmd. */
async function runFilesAndCommands(host: TestHost, config: Record<string, unknown>): Promise<void> {
  for (const f of asList(config.write_files, "write_files")) await writeFile(host, f as Record<string, unknown>);
  const runcmd = asList(config.runcmd, "runcmd");
  if (runcmd.length === 0) return;
  const lines = runcmd.map((item, n) => {
    const line =
      typeof item === "string" ? item : Array.isArray(item) ? item.map((w) => quote(String(w))).join(" ") : undefined;
    if (line === undefined)
      throw new Error(`unsupported user-data: runcmd item ${n + 1} is neither a string nor a list`);
    return `__cloud_init_item=${n + 1}\n${line}\n__cloud_init_rc=$?; [ $__cloud_init_rc -eq 0 ] || exit $__cloud_init_rc`;
  });
  // The EXIT trap names the item that failed, also when the item itself calls exit.
  const report = `trap '__cloud_init_rc=$?; [ $__cloud_init_rc -eq 0 ] || echo "cloud-init: runcmd item $__cloud_init_item failed with exit code $__cloud_init_rc"' EXIT`;
  await put(host, RUNCMD_SCRIPT, Buffer.from(["#!/bin/sh", report, "cd /", ...lines, ""].join("\n")), 0o700);
  const r = await host.exec(`sh ${RUNCMD_SCRIPT} </dev/null >>${CLOUD_INIT_OUTPUT_LOG} 2>&1`);
  if (r.code !== 0) {
    const tail = (await host.exec(`tail -n 20 ${CLOUD_INIT_OUTPUT_LOG}`)).stdout.trimEnd();
    const item = /runcmd item (\d+) failed/.exec(tail)?.[1];
    throw new Error(
      `cloud-init runcmd${item ? ` item ${item}` : ""} on ${host.name} failed with exit code ${r.code}; last output:\n${tail}`,
    );
  }
}

function asList(v: unknown, key: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`unsupported user-data: ${key} must be a list`);
  return v;
}

async function writeFile(host: TestHost, f: Record<string, unknown>): Promise<void> {
  const unknown = Object.keys(f).filter(
    (k) => !["path", "content", "encoding", "permissions", "owner", "defer"].includes(k),
  );
  if (unknown.length)
    throw new Error(
      `unsupported user-data: write_files keys ${unknown.join(", ")} are not implemented by the test runner`,
    );
  const path = f.path;
  if (typeof path !== "string" || !path.startsWith("/"))
    throw new Error(`write_files: path must be absolute, got ${JSON.stringify(path)}`);
  const content = f.content ?? "";
  let bytes = content instanceof Uint8Array ? Buffer.from(content) : Buffer.from(String(content), "utf8");
  const encoding = String(f.encoding ?? "text/plain")
    .trim()
    .toLowerCase();
  if (["b64", "base64", "gz+b64", "gz+base64", "gzip+b64", "gzip+base64"].includes(encoding))
    bytes = Buffer.from(bytes.toString("utf8"), "base64");
  if (["gz", "gzip", "gz+b64", "gz+base64", "gzip+b64", "gzip+base64"].includes(encoding)) bytes = gunzipSync(bytes);
  else if (!["b64", "base64", "text/plain", "text"].includes(encoding))
    throw new Error(`write_files ${path}: unsupported encoding ${encoding}`);
  const perms = f.permissions ?? "0644";
  const mode =
    typeof perms === "number"
      ? perms
      : /^(0o)?[0-7]{1,4}$/.test(String(perms).trim())
        ? parseInt(String(perms).trim().replace(/^0o/, ""), 8)
        : NaN;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777)
    throw new Error(`write_files ${path}: permissions ${JSON.stringify(perms)} are not an octal mode`);
  await put(host, path, bytes, mode);
}

/** Writes bytes to a file inside the host: base64 here, `base64 -d` there, in chunks argv can hold. */
async function put(host: TestHost, path: string, bytes: Buffer, mode: number): Promise<void> {
  const b64 = bytes.toString("base64");
  const steps = [`mkdir -p ${quote(dirname(path))} && : > ${quote(path)} && chmod ${mode.toString(8)} ${quote(path)}`];
  for (let i = 0; i < b64.length; i += EXEC_CHUNK)
    steps.push(`printf %s ${b64.slice(i, i + EXEC_CHUNK)} | base64 -d >> ${quote(path)}`);
  for (const step of steps) {
    const r = await host.exec(`{ ${step}; } 2>&1`);
    if (r.code !== 0)
      throw new Error(
        `cloud-init write_files ${path} on ${host.name} failed with exit code ${r.code}: ${r.stdout.trim()}`,
      );
  }
}

export interface FakeEc2Host {
  host: TestHost;
  /** Settles when the user data has been applied; never rejects (see `error`). */
  cloudInit: Promise<void>;
  error?: Error;
}
export type FakeEc2Boot = ((i: FakeInstance) => Promise<{ privateIp: string; stop(): Promise<void> }>) & {
  /** The host of each instance booted, by instance id. */
  readonly hosts: Map<string, FakeEc2Host>;
};

/**
 * A `boot` for FakeEc2: a new host in the lab per instance, answering once the host is up with its
 * user data started in the background (failures land in `hosts.get(id).error` and in the host's
 * cloud-init-output.log); stopping the instance kills the host.
 */
export function fakeEc2Boot(lab: TestLab): FakeEc2Boot {
  const hosts = new Map<string, FakeEc2Host>();
  const boot = async (i: FakeInstance): Promise<{ privateIp: string; stop(): Promise<void> }> => {
    const host = await lab.addHost();
    const entry: FakeEc2Host = { host, cloudInit: Promise.resolve() };
    const failed = (err: unknown): void => {
      entry.error = err instanceof Error ? err : new Error(String(err));
    };
    if (i.userData) {
      // The SSH module's part before the instance runs (sshd starts with its keys); the rest in the background.
      const booted = await bootCloudInit(host, i.userData).catch(failed);
      if (booted) entry.cloudInit = booted.rest().catch(failed);
    }
    hosts.set(i.id, entry);
    return { privateIp: host.ip, stop: () => host.kill() };
  };
  return Object.assign(boot, { hosts });
}
