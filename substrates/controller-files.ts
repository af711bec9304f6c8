/**
 * What a controller installation is made of, known to everyone who installs or starts one: the
 * built bundles and entry points, the Node flags, and the layout of a controller's data directory.
 */
import { accessSync, constants, readdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { ControllerFiles } from "./ssh/controller-installer";

/** The build output: this file is dist/substrates/controller-files.js, or inlined in dist/controller-bundle/main.js. */
const DIST = join(__dirname, "..");

/**
 * A controller's data directory: `controller.json`, `ca.crt`, `ca.key` and `server.key` (0600),
 * `server.crt`, `store/`, `machines/` (local substrate), `api-address` (written once listening).
 */
export const dataFiles = {
  config: "controller.json",
  caCert: "ca.crt",
  caKey: "ca.key",
  serverCert: "server.crt",
  serverKey: "server.key",
  store: "store",
  machines: "machines",
  apiAddress: "api-address",
  pid: "controller.pid",
  /** The pid of the process that restarts a local controller when it dies (local bootstrap). */
  supervisorPid: "supervisor.pid",
  log: "controller.log",
  /** An accepted enable-ha request waiting for the move from the embedded store into etcd. */
  haPending: "ha-pending.json",
  /** Present once this replica found it was replaced: it then stays down. */
  stoodDown: "stood-down",
  /** The dashboard's consoles' temporary STEWARD_HOMEs (0700; emptied when the controller starts). */
  consoles: "consoles",
  /** The copy of an https:// release source's releases, verified from there (controller/releases/https-mirror.ts). */
  releaseMirror: "release-mirror",
  /** The CAs trusted for an https:// release source, as a replica added later gets them (controller.json names it). */
  releaseSourceCa: "release-source-ca.pem",
};

/**
 * V8 flags for the processes we start. A smaller young generation keeps RSS flat when many agents
 * connect at once (measured: 61 → 43 MiB above idle for 1,000 agents, status latency unchanged);
 * agents are mostly idle and need even less.
 */
export const CONTROLLER_NODE_FLAGS = ["--max-semi-space-size=4"];
export const AGENT_NODE_FLAGS = ["--max-semi-space-size=1"];

/** The agent as shipped: one bundled script plus the hook-tool client (and the workload supervisor), built by `npm run build`. */
export const AGENT_BUNDLE = {
  main: join(DIST, "agent-bundle", "main.js"),
  toolClient: join(DIST, "agent-bundle", "tool-client.js"),
  /** The workload supervisor: an agent image holds it beside main.js, for its init container to place (agent/workload/install.ts). */
  supervisor: join(DIST, "agent-bundle", "supervisor.js"),
};

/**
 * A release: the directories of the build output a controller runs from (its bundle finds the
 * others beside it). `steward upgrade-controller` copies them into a local controller's data directory.
 */
export const RELEASE_DIRS = ["controller-bundle", "agent-bundle", "cli-bundle", "proto", "dashboard"];
/** This installation's build output, holding {@link RELEASE_DIRS}. */
export const BUILD_DIR = DIST;

/** The controller as shipped to remote hosts (bootstrap over SSH): one bundled script. */
export const CONTROLLER_BUNDLE = join(DIST, "controller-bundle", "main.js");

/** The CLI as shipped beside the controller (the dashboard's console pane runs it): one bundled script. */
export const CLI_BUNDLE = join(DIST, "cli-bundle", "main.js");
/** The CLI's entry point in this build (a checkout has it; an installed host has only the bundle). */
export const cliEntry = (): string => join(DIST, "cli", "main.js");

/** The controller's entry point in this build (local bootstrap runs it unbundled). */
export const controllerEntry = (): string => join(DIST, "controller", "main.js");
/** The process that restarts a local controller when it dies (controller/supervisor.ts). */
export const supervisorEntry = (): string => join(DIST, "controller", "supervisor-main.js");

/** Everything a controller install over SSH ships, from this installation. */
export function controllerFiles(): ControllerFiles {
  const etcd = findOnPath("etcd");
  return {
    controller: CONTROLLER_BUNDLE,
    agentMain: AGENT_BUNDLE.main,
    toolClient: AGENT_BUNDLE.toolClient,
    cliMain: CLI_BUNDLE,
    protoDir: join(DIST, "proto"),
    nodeBinary: process.execPath,
    ...(etcd ? { etcdBinary: etcd } : {}),
  };
}

export function findOnPath(binary: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const p = join(dir, binary);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/**
 * What a cloud instance may download while it enrols (`GET /v1/enrol/files/<name>`), by name: the
 * agent, and for a replica the controller's installation as the SSH installer ships it, plus Node.js
 * and etcd for images that lack them. Names are fixed here; nothing else is ever served.
 */
export function enrolmentFiles(): Map<string, string> {
  const f = controllerFiles();
  const protos = readdirSync(f.protoDir)
    .filter((p) => p.endsWith(".proto"))
    .sort();
  return new Map([
    ["agent-bundle/main.js", f.agentMain],
    ["agent-bundle/tool-client.js", f.toolClient],
    ["controller-bundle/main.js", f.controller],
    ["cli-bundle/main.js", f.cliMain],
    ...protos.map((p): [string, string] => [`proto/${p}`, join(f.protoDir, p)]),
    ["node", f.nodeBinary],
    ...(f.etcdBinary ? [["etcd", f.etcdBinary] as [string, string]] : []),
  ]);
}
