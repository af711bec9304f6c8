/**
 * A real controller for a test: its own data directory, real HTTPS on a free loopback port, and the
 * local substrate starting real agent processes. `close()` stops it and reaps every process it
 * started, so a failed test leaves nothing behind.
 */
import { appendFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ModelStatus, TransportLimits, UnitStatusView } from "../../api";
import { ControllerClient, createLogger, readOperatorDir, silentLogger, unitIsReady } from "../../api";
import { Controller, initControllerDir } from "../../controller";
import type { ControllerConfig, ControllerOptions, FailedLoginLimiterOptions } from "../../controller";
import { eventually } from "./eventually";
import { killProcessesUnder } from "./processes";

export const fixturesDir = join(__dirname, "..", "..", "..", "test", "fixtures");
export const operatorsDir = join(__dirname, "..", "..", "..", "operators");

export interface TestController {
  dir: string;
  controller: Controller;
  admin: ControllerClient;
  caCert: string;
  adminPassword: string;
  addresses: string[];
  /** A client logged in as `user`. */
  clientFor(user: string, password: string): ControllerClient;
  /** Uploads an operator directory and returns its hash. */
  upload(dir: string): Promise<string>;
  waitForUnits(
    model: string,
    predicate: (units: UnitStatusView[], s: ModelStatus) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<ModelStatus>;
  close(): Promise<void>;
}

export async function startTestController(
  opts: {
    leadershipLeaseSeconds?: number;
    store?: ControllerConfig["store"];
    agentLogins?: { perSecond: number; burst: number };
    /** The target's budget for agents' migration validations. */
    migrationValidations?: { perSecond: number; burst: number };
    transport?: Partial<TransportLimits>;
    operators?: ControllerConfig["operators"];
    /** Lifetime of user tokens (tests of expiry). */
    tokenLifetimeSeconds?: number;
    failedLogins?: FailedLoginLimiterOptions;
    /** Limits of the dashboard's console pane. */
    consoles?: ControllerOptions["consoles"];
    /** Where the API listens (default loopback): a fake kubelet's pods reach the controller on their bridge's address. */
    listenHost?: string;
    kubernetes?: ControllerOptions["kubernetes"];
    /** Where the controller was bootstrapped. @default "local" */
    substrate?: ControllerConfig["substrate"];
    /** Local machines' settings; agents' directories (when agents run as another user) are in the test's directory. */
    localMachines?: ControllerOptions["localMachines"];
    /** How often cloud instances are listed (a fake cloud's instances change in a tick). */
    cloudPollIntervalMs?: number;
    /** Seconds every secret rotate policy stands for (and the rotate retry): rotations within seconds. */
    secretRotateSeconds?: number;
    /** The agent script local machines run (default this build's bundle): another release's, to test versions. */
    agentEntry?: string;
    /** Where its signed releases are and the keys it trusts (`steward upgrade-model` moves agents to them). */
    releases?: ControllerConfig["releases"];
    /** Writes the controller's log (debug level) to this file, as a bootstrapped controller's controller.log (leak scans read it). */
    logFile?: string;
  } = {},
): Promise<TestController> {
  const dir = await mkdtemp(join(tmpdir(), "steward-t-"));
  // Passable (not listable) by the agents' user when tests run as root: their directories are in `agents/`.
  await chmod(dir, 0o711);
  const dataDir = join(dir, "c");
  const init = await initControllerDir({
    dataDir,
    name: "test",
    listen: { host: opts.listenHost ?? "127.0.0.1", port: 0 },
    substrate: opts.substrate ?? "local",
    ...(opts.store ? { store: opts.store } : {}),
    ...(opts.releases ? { releases: opts.releases } : {}),
  });
  // STEWARD_TEST_LOG=1 shows the controller's log on stderr (for debugging a test).
  const log = opts.logFile
    ? createLogger({ level: "debug", write: (line) => appendFileSync(opts.logFile!, `${line}\n`) })
    : process.env.STEWARD_TEST_LOG
      ? createLogger({ fields: { component: "test-controller" } })
      : silentLogger;
  const controller = await Controller.start({
    dataDir,
    log,
    ...(opts.leadershipLeaseSeconds ? { leadershipLeaseSeconds: opts.leadershipLeaseSeconds } : {}),
    ...(opts.agentLogins ? { agentLogins: opts.agentLogins } : {}),
    ...(opts.migrationValidations ? { migrationValidations: opts.migrationValidations } : {}),
    ...(opts.transport ? { transport: opts.transport } : {}),
    ...(opts.operators ? { operators: opts.operators } : {}),
    ...(opts.tokenLifetimeSeconds ? { tokenLifetimeSeconds: opts.tokenLifetimeSeconds } : {}),
    ...(opts.failedLogins ? { failedLogins: opts.failedLogins } : {}),
    ...(opts.consoles ? { consoles: opts.consoles } : {}),
    ...(opts.kubernetes ? { kubernetes: opts.kubernetes } : {}),
    ...(opts.cloudPollIntervalMs ? { cloudPollIntervalMs: opts.cloudPollIntervalMs } : {}),
    ...(opts.secretRotateSeconds ? { secretRotateSeconds: opts.secretRotateSeconds } : {}),
    ...(opts.agentEntry ? { agentEntry: opts.agentEntry } : {}),
    localMachines: { agentsDir: join(dir, "agents"), ...opts.localMachines },
  });
  const addresses = controller.apiAddresses;
  const clients: ControllerClient[] = [];
  const clientFor = (user: string, password: string): ControllerClient => {
    const c = new ControllerClient({ addresses, caCert: init.caCert, user, password });
    clients.push(c);
    return c;
  };
  const admin = clientFor("admin", init.adminPassword!);
  const tc: TestController = {
    dir,
    controller,
    admin,
    caCert: init.caCert,
    adminPassword: init.adminPassword!,
    addresses,
    clientFor,
    async upload(opDir) {
      const op = await readOperatorDir(opDir);
      return (await admin.uploadOperator(op.bundle)).hash;
    },
    async waitForUnits(model, predicate, what, timeoutMs = 30_000) {
      let seen: UnitStatusView[] = [];
      return eventually(
        what,
        async () => {
          const s = await admin.status(model);
          const units = Object.values(s.applications).flatMap((a) => Object.values(a.units));
          seen = units;
          return predicate(units, s) ? s : undefined;
        },
        timeoutMs,
        150,
      ).catch((err: Error) => {
        // What the units said last: why a wait timed out, without a second run to find out.
        const last = seen.map((u) => `${u.name}: ${u.agent.current} / ${u.workload.current} "${u.workload.message}"`);
        throw new Error(`${err.message}; the units last said: ${last.join("; ") || "(no units)"}`);
      });
    },
    async close() {
      for (const c of clients) c.close();
      // The controller a test started again (tc.controller) is the one to stop.
      await tc.controller.stop().catch(() => undefined);
      await killProcessesUnder(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
  return tc;
}

/** How to reach `tc` as its admin: a program's Model takes it as its connection, the CLI as a controller entry. */
export const adminConnection = (
  tc: TestController,
): { addresses: string[]; caCert: string; user: "admin"; password: string } => ({
  addresses: tc.addresses,
  caCert: tc.caCert,
  user: "admin",
  password: tc.adminPassword,
});

export const allReady =
  (n: number) =>
  (units: UnitStatusView[]): boolean =>
    units.length === n && units.every(unitIsReady);

/**
 * Whether the replica on host `ip` has published its presence since `t0`. A killed replica still
 * looks present until its lease runs out, so "every voter present" cannot tell that it is back.
 */
export async function replicaBackSince(client: ControllerClient, ip: string, t0: number): Promise<boolean> {
  const info = await client.controllerInfo().catch(() => undefined);
  return (
    info?.replicas.some((r) => r.addresses.some((a) => a.startsWith(`${ip}:`)) && Date.parse(r.since) > t0) ?? false
  );
}
