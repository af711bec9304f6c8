/**
 * A controller replica in a Kubernetes pod (`main.js --pod`; manifests in
 * substrates/kubernetes/controller-pods.ts) gets its data directory before it starts:
 *
 * - a claim that holds one (the pod was made again on its volume) is used as it is: the replica
 *   restarts and its etcd member rejoins under its stable DNS name;
 * - pod 0 at bootstrap initialises it from the seed Secret (name, uuid, admin password, CA); once the
 *   bootstrap has logged in it marks the enrolment Secret `bootstrapped` (and the CLI deletes the
 *   seed), so a later empty claim never starts a second cluster;
 * - any other empty claim (a new pod as the controller grows, or a pod whose volume was lost) waits
 *   for its enrolment token in the enrolment Secret (Kubernetes updates a mounted Secret in place),
 *   which the leader writes when the quorum keeper takes this pod; it then collects its data from
 *   the cluster once the leader has added it to etcd, as a cloud replica does (cloud-init.ts).
 */
import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import type { Logger } from "../api";
import { CONTROLLER_TLS_NAME, ENROLMENT_HEADER, StewardError, ordinalOfPod } from "../api";
import { kubernetes } from "../substrates";
import { initControllerDir } from "./bootstrap";
import { dataFiles } from "./config";

export interface PodReplicaOptions {
  dataDir: string;
  seedDir: string;
  enrolDir: string;
  /** The headless Service's name with its namespace (`ctl-peers.steward`): replica K is `<name>-K.<peers>`. */
  peers: string;
  podName: string;
  log: Logger;
  /** How often the enrolment Secret is read and the cluster asked, in ms. @default 2000 */
  pollMs?: number;
  signal?: AbortSignal;
}

/** What the bootstrap leaves for pod 0 (the seed Secret's `seed.json`). */
export interface ControllerSeed {
  name: string;
  uuid: string;
  adminPassword: string;
  caCert: string;
  caKey: string;
  /** Its stable DNS name (advertised, in its certificate). */
  address: string;
  /** The image kubernetes models' pods run the agent from (the controller's `kubernetes.agentImage`). */
  agentImage?: string;
}

/** Makes `dataDir` a replica's data directory, unless it is one already; resolves when it is. */
export async function preparePodReplica(o: PodReplicaOptions): Promise<"existing" | "seeded" | "enrolled"> {
  if (
    await readFile(join(o.dataDir, dataFiles.config), "utf8").then(
      () => true,
      () => false,
    )
  )
    return "existing";
  const ordinal = ordinalOfPod(o.podName);
  const bootstrapped = await readFile(join(o.enrolDir, kubernetes.BOOTSTRAPPED_KEY), "utf8").then(
    () => true,
    () => false,
  );
  const seed =
    ordinal === 0 && !bootstrapped
      ? await readFile(join(o.seedDir, kubernetes.SEED_KEY), "utf8").catch(() => undefined)
      : undefined;
  if (seed) {
    const s = JSON.parse(seed) as ControllerSeed;
    await initControllerDir({
      dataDir: o.dataDir,
      name: s.name,
      uuid: s.uuid,
      adminPassword: s.adminPassword,
      ca: { certPem: s.caCert, keyPem: s.caKey },
      listen: { host: "0.0.0.0", port: kubernetes.CONTROLLER_API_PORT },
      advertise: [`${s.address}:${kubernetes.CONTROLLER_API_PORT}`],
      ...(s.agentImage ? { kubernetes: { agentImage: s.agentImage } } : {}),
    });
    o.log.info("initialised the first replica from the bootstrap's seed", { pod: o.podName });
    return "seeded";
  }
  await enrol(o, ordinal);
  return "enrolled";
}

async function enrol(o: PodReplicaOptions, ordinal: number): Promise<void> {
  const pollMs = o.pollMs ?? 2000;
  const tokenFile = join(o.enrolDir, kubernetes.replicaTokenKey(ordinal));
  const others = [...Array(kubernetes.MAX_CONTROLLER_PODS).keys()]
    .filter((k) => k !== ordinal)
    .map((k) => `${o.podName.replace(/-\d+$/, "")}-${k}.${o.peers}`);
  let said = "";
  const say = (what: string, fields: Record<string, unknown> = {}): void => {
    if (what !== said) {
      said = what;
      o.log.info(what, fields);
    }
  };
  for (;;) {
    if (o.signal?.aborted) throw new StewardError("cancelled", "stopped while waiting to join the cluster");
    const token = (await readFile(tokenFile, "utf8").catch(() => "")).trim();
    const caCert = await readFile(join(o.enrolDir, "ca.crt"), "utf8").catch(() => "");
    if (!token || !caCert) {
      say(
        "this replica's volume is empty: waiting for the controller to take it into the cluster (an enrolment token in its Secret)",
        { file: tokenFile },
      );
    } else {
      const answer = await firstAnswer(others, token, caCert);
      if (answer.files) {
        await writeData(o.dataDir, answer.files);
        o.log.info("collected this replica's data from the cluster", { pod: o.podName });
        return;
      }
      say(
        answer.staged
          ? "staged: waiting for the leader to add this replica to etcd"
          : `no replica answered yet (${answer.why})`,
      );
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

interface Answer {
  files?: Record<string, string>;
  staged?: boolean;
  why?: string;
}

/** Asks each other replica in turn to hand over this one's data: the first that answers decides. */
async function firstAnswer(addresses: string[], token: string, caCert: string): Promise<Answer> {
  let why = "";
  for (const host of addresses) {
    const res = await post(host, token, caCert).catch((err: unknown) => ({ status: 0, body: (err as Error).message }));
    if (res.status === 200) return { files: (JSON.parse(res.body) as { files: Record<string, string> }).files };
    if (res.status === 409) return { staged: true };
    // A refused token (401/403) is final for this token: the next one the leader writes is tried.
    why = res.status ? `${host}: HTTP ${res.status}` : `${host}: ${res.body}`;
  }
  return { why };
}

function post(host: string, token: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port: kubernetes.CONTROLLER_API_PORT,
        method: "POST",
        path: "/v1/enrol/replica",
        ca,
        servername: CONTROLLER_TLS_NAME,
        headers: { [ENROLMENT_HEADER]: token },
        timeout: 5000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });
}

async function writeData(dir: string, files: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // The configuration last: its presence marks a complete directory.
  for (const [name, content] of Object.entries(files).sort(([a], [b]) =>
    a === dataFiles.config ? 1 : b === dataFiles.config ? -1 : a.localeCompare(b),
  )) {
    await writeFile(join(dir, name), content, { mode: name.endsWith(".crt") ? 0o644 : 0o600 });
  }
}

/** A replica removed from the cluster while away cannot rejoin with its data: empty the claim, so the pod enrols afresh. */
export async function emptyDataDir(dir: string): Promise<void> {
  for (const e of await readdir(dir).catch(() => [] as string[]))
    await rm(join(dir, e), { recursive: true, force: true });
}
