/**
 * The container images (images/*\/Dockerfile, scripts/build-images.sh). The build contexts the script
 * prepares hold every directory their Dockerfiles COPY, the files their entrypoints run, and the
 * shared libraries (and loader) that Node and etcd need, at the paths the loader looks for them;
 * Node and etcd start with the shipped libraries alone. Where buildah is installed
 * (test/harness/setup-host.sh installs it), both images are built FROM scratch in a store of the
 * test's own (vfs driver, chroot isolation) and run: Node, the agent's usage, /bin/sh as the
 * image's user for hooks, etcd, and the controller's `init`; pushed (the script's --push) to a
 * registry on loopback (Debian's docker-registry), which then holds both, their Node and glibc
 * layers once; and the agent of the image, started for
 * a local machine, runs a real operator's hooks (busybox's sh and tr, the hook tools) until its unit
 * is active; the controller of the image moves into etcd as enable-ha does (its etcd member from
 * the image, the etcd client's proto files) and serves from it.
 */
import test from "ava";
import { execFile, spawn, spawnSync } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { lstat, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join, posix } from "node:path";
import { promisify } from "node:util";
import { ControllerClient, readOperatorDir, silentLogger } from "../api";
import { Controller, DEFAULT_AGENT_IMAGE, initControllerDir } from "../controller";
import { eventually } from "./harness/eventually";
import { operatorsDir } from "./harness/controller";
import { killProcessesUnder } from "./harness/processes";

const run = promisify(execFile);
const repo = join(__dirname, "..", "..");
const script = join(repo, "scripts", "build-images.sh");
const IMAGES = ["agent", "controller"] as const;
type Image = (typeof IMAGES)[number];

interface Dockerfile {
  from: string;
  copies: { src: string; dest: string; chown?: string }[];
  user?: string;
  env: Record<string, string>;
  entrypoint: string[];
  cmd?: string[];
}

/** The instructions this project's Dockerfiles use (continuation lines joined, comments dropped). */
function parseDockerfile(text: string): Dockerfile {
  const lines = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const d: Dockerfile = { from: "", copies: [], env: {}, entrypoint: [] };
  for (const line of lines) {
    const [op, ...rest] = line.split(/\s+/);
    const arg = line.slice(op!.length).trim();
    switch (op!.toUpperCase()) {
      case "FROM":
        d.from = arg;
        break;
      case "COPY": {
        const chown = rest.find((r) => r.startsWith("--chown="))?.slice("--chown=".length);
        const [src, dest] = rest.filter((r) => !r.startsWith("--"));
        d.copies.push({ src: src!, dest: dest!, ...(chown ? { chown } : {}) });
        break;
      }
      case "USER":
        d.user = arg;
        break;
      case "ENV":
        for (const m of arg.matchAll(/(\w+)=(\S+)/g)) d.env[m[1]!] = m[2]!;
        break;
      case "ENTRYPOINT":
        d.entrypoint = JSON.parse(arg) as string[];
        break;
      case "CMD":
        d.cmd = JSON.parse(arg) as string[];
        break;
    }
  }
  return d;
}

interface Entry {
  kind: "file" | "dir" | "link";
  mode: number;
  target?: string;
}

/** The image's filesystem as its COPY instructions lay it out from the context. */
async function imageTree(ctx: string, d: Dockerfile): Promise<Map<string, Entry>> {
  const tree = new Map<string, Entry>([["/", { kind: "dir", mode: 0o755 }]]);
  const walk = async (src: string, dest: string): Promise<void> => {
    for (const name of await readdir(src)) {
      const from = join(src, name);
      const to = posix.join(dest, name);
      const st = await lstat(from);
      if (st.isSymbolicLink()) tree.set(to, { kind: "link", mode: st.mode & 0o7777, target: await readlink(from) });
      else if (st.isDirectory()) {
        tree.set(to, { kind: "dir", mode: st.mode & 0o7777 });
        await walk(from, to);
      } else tree.set(to, { kind: "file", mode: st.mode & 0o7777 });
    }
  };
  for (const c of d.copies) {
    // COPY makes the destination's missing parents.
    for (let p = posix.normalize(c.dest).replace(/(.)\/$/, "$1"); p !== "/"; p = posix.dirname(p))
      if (!tree.has(p)) tree.set(p, { kind: "dir", mode: 0o755 });
    await walk(join(ctx, c.src), posix.normalize(c.dest));
  }
  return tree;
}

/** Follows symlinks (absolute or relative, in every component) inside the image. */
function resolve(tree: Map<string, Entry>, path: string, hops = 0): { path: string; entry: Entry } | undefined {
  if (hops > 20) return undefined;
  const parts = path.split("/").filter(Boolean);
  let at = "/";
  for (let i = 0; i < parts.length; i++) {
    const next = posix.join(at, parts[i]!);
    const e = tree.get(next);
    if (!e) return undefined;
    if (e.kind === "link") {
      const target = posix.isAbsolute(e.target!) ? e.target! : posix.join(at, e.target!);
      return resolve(tree, posix.join(target, ...parts.slice(i + 1)), hops + 1);
    }
    at = next;
  }
  const entry = tree.get(at);
  return entry ? { path: at, entry } : undefined;
}

/** What the loader loads for a binary on this host (ldd): the libraries' paths and the loader's. */
async function neededPaths(binary: string): Promise<string[]> {
  const { stdout } = await run("ldd", [binary]);
  return stdout.split("\n").flatMap((l) => {
    const m = /=>\s+(\/\S+)/.exec(l) ?? /^\s*(\/\S+)\s+\(/.exec(l);
    return m ? [m[1]!] : [];
  });
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

let work: string;
let out: string;
let buildah: string[] | undefined;
let nodeVersion: string;
const dockerfiles = new Map<Image, Dockerfile>();
const trees = new Map<Image, Map<string, Entry>>();
let built: { code: number; out: string } = { code: -1, out: "" };

const haveBuildah = spawnSync("buildah", ["--version"]).status === 0;
/** Debian's docker-registry (the Distribution registry), to push to on loopback. */
const haveRegistry = haveBuildah && spawnSync("docker-registry", ["--version"]).status === 0;
let registry = "steward-test";
let registryProc: ChildProcess | undefined;
const ref = (image: Image): string => `${registry}/${image}:test`;
/** What the script needs besides the build (setup-host.sh installs them as root). */
const missing = [
  ...(spawnSync("etcd", ["--version"]).status === 0 ? [] : ["etcd (etcd-server)"]),
  ...(spawnSync("/bin/busybox", ["true"]).status === 0 && spawnSync("ldd", ["/bin/busybox"]).status !== 0
    ? []
    : ["a static /bin/busybox (busybox-static)"]),
];
const withTools = missing.length === 0 ? test : test.skip;

test.before(async () => {
  if (missing.length > 0) return;
  work = await mkdtemp(join(tmpdir(), "steward-images-"));
  out = join(work, "ctx");
  nodeVersion = /^NODE_VERSION_DEFAULT=(\S+)$/m.exec(await readFile(script, "utf8"))![1]!;
  const args = ["--storage-driver", "vfs", "--root", join(work, "store"), "--runroot", join(work, "run")];
  if (haveBuildah) buildah = args;
  if (haveRegistry) {
    // A registry of the test's own on a free loopback port, plain HTTP, storing under the test's directory.
    const port = await freePort();
    await writeFile(
      join(work, "registry.yml"),
      `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(work, "registry")}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
    );
    registryProc = spawn("docker-registry", ["serve", join(work, "registry.yml")], { stdio: "ignore" });
    await eventually(
      "the registry answering",
      () =>
        fetch(`http://127.0.0.1:${port}/v2/`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      10_000,
      100,
    );
    registry = `127.0.0.1:${port}/steward-test`;
  }
  const env = {
    ...process.env,
    REGISTRY: registry,
    TAG: "test",
    BUILDER: haveBuildah ? "buildah" : "none",
    BUILDAH_ARGS: args.join(" "),
    PUSH_ARGS: "--tls-verify=false",
  };
  try {
    const r = await run(
      "bash",
      [script, "--out", out, ...(haveBuildah ? [] : ["--context-only"]), ...(haveRegistry ? ["--push"] : [])],
      { env, timeout: 180_000, maxBuffer: 64 << 20 },
    );
    built = { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string; message: string };
    built = {
      code: typeof err.code === "number" ? err.code : 1,
      out: `${err.stdout ?? ""}${err.stderr ?? ""}${err.message}`,
    };
  }
  for (const image of IMAGES) {
    const d = parseDockerfile(await readFile(join(repo, "images", image, "Dockerfile"), "utf8"));
    dockerfiles.set(image, d);
    trees.set(image, await imageTree(join(out, image), d).catch(() => new Map()));
  }
});

test.after.always(async () => {
  registryProc?.kill();
  if (buildah) await run("buildah", [...buildah, "rm", "--all"]).catch(() => undefined);
  if (work) await rm(work, { recursive: true, force: true });
});

// Said as a skipped test, not a passing one: nothing was checked.
if (missing.length > 0)
  test.skip(`the images' tests: no ${missing.join(", no ")} here (npm test's pretest installs them as root)`, () =>
    undefined);

withTools("the script prepares both contexts (and builds them where buildah is installed)", (t) => {
  t.is(built.code, 0, built.out);
  if (!haveBuildah)
    t.log(
      "buildah is not installed: only the build contexts are checked (apt-get install buildah to build the images too)",
    );
  else if (!haveRegistry)
    t.log(
      "docker-registry is not installed: the images are built but not pushed (apt-get install docker-registry to test pushing too)",
    );
});

for (const image of IMAGES) {
  withTools(
    `${image}: FROM scratch; every COPY source is in the context; a numeric non-root user; an exec-form entrypoint that exists in the image`,
    async (t) => {
      const d = dockerfiles.get(image)!;
      const tree = trees.get(image)!;
      t.is(d.from, "scratch");
      t.true(d.copies.length > 0);
      for (const c of d.copies)
        t.true(
          (await stat(join(out, image, c.src)).catch(() => undefined))?.isDirectory() ?? false,
          `COPY ${c.src}: not a directory of the context`,
        );
      t.regex(d.user ?? "", /^[1-9]\d*:\d+$/);
      const uid = d.user!.split(":")[0];
      t.true(
        (await readFile(join(out, image, "runtime", "etc", "passwd"), "utf8"))
          .split("\n")
          .some((l) => l.split(":")[2] === uid),
        "the user is in /etc/passwd (os.userInfo(), id)",
      );
      t.true(
        d.copies.some((c) => c.chown === d.user && c.dest.startsWith("/var/lib/steward")),
        "the state directory belongs to the image's user",
      );
      const [node, ...rest] = d.entrypoint;
      const bin = resolve(tree, node!);
      t.truthy(bin, `${node} is not in the image`);
      t.true(((bin?.entry.mode ?? 0) & 0o111) !== 0, `${node} is not executable`);
      const mainJs = rest.find((a) => a.endsWith(".js"))!;
      t.is(resolve(tree, mainJs)?.entry.kind, "file", `${mainJs} is not in the image`);
      t.is(resolve(tree, "/tmp")?.entry.mode, 0o1777);
      // Every directory on PATH that holds something is in the image.
      t.true(d.env.PATH!.split(":").includes(posix.dirname(node!)));
    },
  );

  withTools(
    `${image}: the libraries of ${image === "controller" ? "Node and etcd" : "Node"} are in the image where the loader looks, and suffice to run them`,
    async (t) => {
      const tree = trees.get(image)!;
      const ctx = join(out, image);
      const node = join(ctx, "node", "usr", "local", "bin", "node");
      const binaries = [node, ...(image === "controller" ? [join(ctx, "etcd", "usr", "local", "bin", "etcd")] : [])];
      for (const b of binaries) {
        for (const p of await neededPaths(b))
          t.is(resolve(tree, p)?.entry.kind, "file", `${b} needs ${p}, which is not in the image`);
      }
      // Through the image's own loader, with its libraries only (no host cache).
      const loader = join(ctx, "runtime", "lib64", "ld-linux-x86-64.so.2");
      const libs = join(ctx, "runtime", "lib", "x86_64-linux-gnu");
      const v = await run(loader, ["--inhibit-cache", "--library-path", libs, node, "--version"]);
      t.is(v.stdout.trim(), `v${nodeVersion}`);
      if (image === "controller") {
        const e = await run(loader, ["--inhibit-cache", "--library-path", libs, binaries[1]!, "--version"]);
        t.regex(e.stdout, /etcd Version: 3\.(\d+)/);
        t.true(Number(/etcd Version: 3\.(\d+)/.exec(e.stdout)![1]) >= 4, "etcd 3.4 or newer");
      }
    },
  );
}

withTools("agent: /bin/sh and the basic tools for hooks, static; the hook-tool client beside the agent", async (t) => {
  const tree = trees.get("agent")!;
  for (const tool of ["/bin/sh", "/bin/cat", "/bin/sed", "/usr/bin/awk", "/bin/grep", "/usr/bin/tr", "/usr/bin/env"])
    t.is(resolve(tree, tool)?.entry.kind, "file", `${tool} is not in the image`);
  const sh = resolve(tree, "/bin/sh")!.path;
  t.is(sh, "/bin/busybox");
  const busybox = join(out, "agent", "busybox", "bin", "busybox");
  await t.throwsAsync(run("ldd", [busybox]), undefined, "busybox must be statically linked");
  t.is((await run(busybox, ["sh", "-c", "echo ok"])).stdout, "ok\n");
  // agent/hook-tools/server.ts writes `exec node <dir of the agent>/tool-client.js`.
  t.is(resolve(tree, "/opt/steward/agent-bundle/tool-client.js")?.entry.kind, "file");
});

withTools(
  "controller: etcd on PATH; proto/ where the bundled etcd client loads it; the dashboard, agent and CLI bundles beside it",
  async (t) => {
    const tree = trees.get("controller")!;
    const d = dockerfiles.get("controller")!;
    t.true(
      d.env.PATH!.split(":").some((dir) => resolve(tree, posix.join(dir, "etcd"))?.entry.kind === "file"),
      "etcd is not on the image's PATH (controller/cluster/etcd-member.ts spawns `etcd`)",
    );
    const bundle = await readFile(
      join(out, "controller", "steward", "opt", "steward", "controller-bundle", "main.js"),
      "utf8",
    );
    t.true(bundle.includes("/../proto/rpc.proto"), "the etcd client loads ${__dirname}/../proto/rpc.proto");
    for (const f of [
      "/opt/steward/proto/rpc.proto",
      "/opt/steward/proto/kv.proto",
      "/opt/steward/proto/auth.proto",
      "/opt/steward/dashboard/index.html",
      "/opt/steward/agent-bundle/main.js",
      "/opt/steward/agent-bundle/tool-client.js",
      "/opt/steward/cli-bundle/main.js",
    ]) {
      t.is(resolve(tree, f)?.entry.kind, "file", `${f} is not in the image`);
    }
    t.deepEqual(d.cmd, ["--data-dir", "/var/lib/steward/controller"]);
    t.is(resolve(tree, "/var/lib/steward/controller")?.entry.kind, "dir");
  },
);

const withBuildah = haveBuildah && missing.length === 0 ? test.serial : test.skip;

async function inImage(image: Image, cmd: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const name = `steward-test-${image}`;
  await run("buildah", [...buildah!, "from", "--name", name, ref(image)]).catch(() => undefined);
  try {
    const r = await run("buildah", [...buildah!, "run", name, "--", ...cmd], {
      env: { ...process.env, BUILDAH_ISOLATION: "chroot" },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === "number" ? err.code : -1, stdout: err.stdout ?? "", stderr: err.stderr ?? "" };
  }
}

withBuildah("built agent image: Node runs; the agent prints its usage; /bin/sh runs as user 10001", async (t) => {
  t.is(built.code, 0, built.out);
  t.is((await inImage("agent", ["/usr/local/bin/node", "--version"])).stdout.trim(), `v${nodeVersion}`);
  const usage = await inImage("agent", ["/usr/local/bin/node", "/opt/steward/agent-bundle/main.js"]);
  t.not(usage.code, 0);
  t.regex(usage.stderr, /usage: agent\/main\.js --dir DIR/);
  // With the pod's arguments (unit-pods.ts) but not its downward-API environment: it says what is missing.
  const pod = await inImage("agent", [
    "/usr/local/bin/node",
    "/opt/steward/agent-bundle/main.js",
    "--pod",
    "--dir",
    "/var/lib/steward/agent",
    "--configs",
    "/etc/steward/agents",
  ]);
  t.regex(pod.stderr, /POD_NAME is not set: give the agent container the pod's name/);
  const sh = await inImage("agent", [
    "/bin/sh",
    "-c",
    "echo ok; id -u; touch /var/lib/steward/agent/x && echo writable",
  ]);
  t.is(sh.stdout, "ok\n10001\nwritable\n", sh.stderr);
  const { stdout } = await run("buildah", [...buildah!, "inspect", "--type", "image", ref("agent")]);
  const config = (JSON.parse(stdout) as { OCIv1: { config: { User: string; Entrypoint: string[] } } }).OCIv1.config;
  t.is(config.User, "10001:10001");
  t.deepEqual(config.Entrypoint, dockerfiles.get("agent")!.entrypoint);
});

withBuildah("built controller image: etcd runs; the controller initialises its data directory", async (t) => {
  t.is(built.code, 0, built.out);
  t.regex((await inImage("controller", ["/usr/local/bin/etcd", "--version"])).stdout, /etcd Version: 3\./);
  const init = await inImage("controller", [
    "/usr/local/bin/node",
    "/opt/steward/controller-bundle/main.js",
    "init",
    "--data-dir",
    "/var/lib/steward/controller",
    "--name",
    "img",
    "--listen",
    "127.0.0.1:0",
  ]);
  t.is(init.code, 0, init.stderr);
  const res = JSON.parse(init.stdout.trim().split("\n").pop()!) as { created: boolean; caCert: string };
  t.true(res.created);
  t.regex(res.caCert, /BEGIN CERTIFICATE/);
});

withBuildah(
  "an agent in the built image runs a real operator's hooks against a controller: motd's unit turns active",
  async (t) => {
    t.is(built.code, 0, built.out);
    const dir = await mkdtemp(join(tmpdir(), "steward-image-agent-"));
    const dataDir = join(dir, "c");
    const init = await initControllerDir({ dataDir, name: "images", listen: { host: "127.0.0.1", port: 0 } });
    process.env.STEWARD_TEST_AGENT_IMAGE = ref("agent");
    process.env.STEWARD_TEST_BUILDAH_ARGS = buildah!.join(" ");
    // The launcher runs buildah, which needs root: it starts the agent in the image itself.
    const controller = await Controller.start({
      dataDir,
      log: silentLogger,
      agentEntry: join(__dirname, "harness", "agent-in-image.js"),
      localAgentsAsRoot: true,
    });
    const admin = new ControllerClient({
      addresses: controller.apiAddresses,
      caCert: init.caCert,
      user: "admin",
      password: init.adminPassword!,
    });
    try {
      await admin.createModel("m");
      const op = await readOperatorDir(join(operatorsDir, "motd"));
      const hash = (await admin.uploadOperator(op.bundle)).hash;
      await admin.deploy("m", {
        name: "motd",
        operator: hash,
        units: 1,
        config: { message: "hello from the image", uppercase: true },
      });
      const unit = await eventually(
        "motd/0 active",
        async () => {
          const u = (await admin.status("m")).applications.motd?.units["motd/0"];
          return u?.workload.current === "active" && u.agent.current === "idle" ? u : undefined;
        },
        60_000,
        250,
      );
      // config-changed uppercased it with busybox's tr and reported it with the status-set hook tool.
      t.is(unit.workload.message, "motd: HELLO FROM THE IMAGE");
      // The machine reports the container's hostname (buildah gives it the container's id), not this host's.
      const machine = (await admin.status("m")).machines["0"];
      t.truthy(machine?.hostname);
      t.not(machine?.hostname, hostname());
    } finally {
      admin.close();
      await controller.stop().catch(() => undefined);
      await killProcessesUnder(dir);
      await rm(dir, { recursive: true, force: true });
    }
  },
);

const cmdline = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
};

/** Every process below `root` (children, their children, …). */
async function descendants(root: number): Promise<number[]> {
  const parent = new Map<number, number>();
  for (const entry of await readdir("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid) parent.set(pid, ppid);
  }
  const below = (p: number): number[] => [...parent].filter(([, pp]) => pp === p).flatMap(([c]) => [c, ...below(c)]);
  return below(root);
}

/** Whether nothing listens on 127.0.0.1:port. */
const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });

withBuildah(
  "the built controller image runs its etcd member: moved into etcd as enable-ha does, it serves from it",
  async (t) => {
    t.is(built.code, 0, built.out);
    // The move starts a one-member cluster on etcd's default ports (2379, 2380) on the advertised host.
    // Another test's etcd may hold them for a while: wait for them rather than skip.
    await eventually(
      "etcd's default ports 2379 and 2380 free on this machine",
      async () => (await portFree(2379)) && (await portFree(2380)),
      120_000,
      1000,
    );
    const port = await freePort();
    const name = "steward-test-controller-ha";
    await run("buildah", [...buildah!, "from", "--name", name, ref("controller")]);
    const env = { ...process.env, BUILDAH_ISOLATION: "chroot" };
    const main = ["/usr/local/bin/node", "/opt/steward/controller-bundle/main.js"];
    const data = "/var/lib/steward/controller";
    const init = await run(
      "buildah",
      [
        ...buildah!,
        "run",
        name,
        "--",
        ...main,
        "init",
        "--data-dir",
        data,
        "--name",
        "ha",
        "--listen",
        `127.0.0.1:${port}`,
        "--advertise",
        `127.0.0.1:${port}`,
      ],
      { env },
    );
    const { caCert, adminPassword } = JSON.parse(init.stdout.trim().split("\n").pop()!) as {
      caCert: string;
      adminPassword: string;
    };
    // What enable-ha leaves for the restart (controller/cluster/cluster-control.ts).
    const pending = join(work, "ha-pending.json");
    await writeFile(pending, JSON.stringify({ ha: {}, spares: [] }));
    await run("buildah", [...buildah!, "copy", "--chown", "10001:10001", name, pending, `${data}/ha-pending.json`]);
    const proc = spawn("buildah", [...buildah!, "run", name, "--", ...main, "--data-dir", data], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let log = "";
    proc.stdout.on("data", (b: Buffer) => {
      log += b.toString();
    });
    proc.stderr.on("data", (b: Buffer) => {
      log += b.toString();
    });
    const admin = new ControllerClient({
      addresses: [`127.0.0.1:${port}`],
      caCert,
      user: "admin",
      password: adminPassword,
    });
    try {
      await eventually(
        "the controller serving from etcd",
        async () => (/controller listening .*store=etcd/.test(log) ? true : undefined),
        60_000,
        200,
      ).catch((e: Error) => {
        throw new Error(`${e.message}\n${log}`);
      });
      t.regex(log, /state copied into etcd/);
      await admin.createModel("on-etcd");
      t.truthy((await admin.status("on-etcd")).model);
      // etcd runs from the image, as the image's user.
      const etcdPid = (await descendants(proc.pid!)).find((pid) => cmdline(pid).startsWith("etcd\0"));
      t.truthy(etcdPid, "no etcd process under the controller");
      t.regex(await readFile(`/proc/${etcdPid}/status`, "utf8"), /^Uid:\s+10001\b/m);
    } finally {
      admin.close();
      // Only processes this test started: the buildah run's descendants (other tests' pods may run
      // controllers with the same data directory path in namespaces of their own).
      const mine = await descendants(proc.pid!);
      // SIGTERM to the controller itself, as a container runtime stops it (buildah run would SIGKILL
      // it and orphan etcd): it stops its etcd member and exits.
      for (const pid of mine) if (cmdline(pid).startsWith("/usr/local/bin/node\0")) process.kill(pid, "SIGTERM");
      const alive = (pid: number): boolean => cmdline(pid) !== "";
      const exited = await eventually(
        "the controller and its etcd member gone",
        async () => (proc.exitCode !== null && !mine.some(alive) ? true : undefined),
        30_000,
        100,
      ).catch(() => false);
      for (const pid of mine.filter(alive)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          /* gone */
        }
      }
      proc.kill("SIGKILL");
      await run("buildah", [...buildah!, "rm", name]).catch(() => undefined);
      t.true(exited, "the controller or its etcd member did not stop on SIGTERM");
    }
  },
);

(haveRegistry && missing.length === 0 ? test : test.skip)(
  "pushed: the registry holds both images, their runtime and Node layers stored once",
  async (t) => {
    t.is(built.code, 0, built.out);
    const [host, ...path] = registry.split("/");
    const layers = new Map<Image, string[]>();
    for (const image of IMAGES) {
      const res = await fetch(`http://${host}/v2/${path.join("/")}/${image}/manifests/test`, {
        headers: {
          accept: "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
        },
      });
      t.is(res.status, 200, `${ref(image)} is not in the registry`);
      const manifest = (await res.json()) as { layers: { digest: string; size: number }[] };
      layers.set(
        image,
        manifest.layers.map((l) => l.digest),
      );
      for (const l of manifest.layers)
        t.is(
          (await fetch(`http://${host}/v2/${path.join("/")}/${image}/blobs/${l.digest}`, { method: "HEAD" })).status,
          200,
        );
    }
    // COPY runtime/ and COPY node/ come first in both Dockerfiles, and the same bytes make the same layers.
    t.deepEqual(layers.get("agent")!.slice(0, 2), layers.get("controller")!.slice(0, 2));
    t.notDeepEqual(layers.get("agent")!.slice(2), layers.get("controller")!.slice(2));
  },
);

test("by default the script tags the agent image the controller's pods ask for (DEFAULT_AGENT_IMAGE); REGISTRY and TAG rename both", async (t) => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "REGISTRY" && k !== "TAG"));
  t.deepEqual((await run("bash", [script, "--print-refs"], { env })).stdout.trim().split("\n"), [
    DEFAULT_AGENT_IMAGE,
    DEFAULT_AGENT_IMAGE.replace("/agent:", "/controller:"),
  ]);
  const renamed = await run("bash", [script, "--print-refs"], {
    env: { ...env, REGISTRY: "registry.example.com/team/steward/", TAG: "1.2.3" },
  });
  t.deepEqual(renamed.stdout.trim().split("\n"), [
    "registry.example.com/team/steward/agent:1.2.3",
    "registry.example.com/team/steward/controller:1.2.3",
  ]);
});
