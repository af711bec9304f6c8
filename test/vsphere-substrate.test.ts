/**
 * The vsphere substrate's broker against vcsim, VMware's own vSphere simulator (real vim25 SOAP
 * over TLS; test/harness/vcsim.ts), whose powered-on VMs get a FAKE guest: the harness's guest
 * bridge boots a test host per VM and applies the VM's `guestinfo.userdata` with the test
 * cloud-init, as cloud-init's VMware datasource would. The enrolment endpoints the user data calls
 * are a small FAKE controller here (the broker is tested alone: wiring it into the controller's
 * provisioner is another test): it serves a stub agent that logs in with the credential it was
 * enrolled with.
 *
 * The SOAP client's own tests need only vcsim, not root.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { randomBytes, randomUUID } from "node:crypto";
import { createServer } from "node:https";
import type { Server } from "node:https";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import {
  AGENT_CONFIG_FILE,
  CONTROLLER_TLS_NAME,
  ENROLMENT_HEADER,
  StewardError,
  agentConfigText,
  parseConstraints,
} from "../api";
import { createCertificateAuthority, issueServerCertificate } from "../controller";
import type { MachineSpec } from "../substrates";
import { vsphere } from "../substrates";
import { eventually } from "./harness/eventually";
import { TestLab } from "./harness/hosts";
import type { BridgedVm, Vcsim } from "./harness/vcsim";
import { startVcsim, vcsimAvailable } from "./harness/vcsim";

const {
  EXTRA_CONFIG,
  MoRef,
  VimClient,
  VsphereFault,
  VsphereMachines,
  optionValues,
  parseXml,
  toXml,
  vmName,
  xsdString,
} = vsphere;
type MoRef = vsphere.MoRef;
type VspherePlacement = vsphere.VspherePlacement;

const root = process.getuid?.() === 0;
const withLab = root ? test.serial : test.skip; // test hosts are namespaces: root
// vcsim is built by test/harness/vcsim/build.sh; as root (CI), a missing one fails the tests, not skips them.
const withVcsim = root || vcsimAvailable() ? test.serial : test.skip;

// ---- a FAKE controller: just the enrolment endpoints, and a login for the stub agent ----

/** The stub agent: reads its agent.json and tells the fake controller it runs, with its credential. */
const STUB_AGENT = `"use strict";
const fs = require("fs"), https = require("https"), path = require("path");
const dir = process.argv[process.argv.indexOf("--dir") + 1];
const cfg = JSON.parse(fs.readFileSync(path.join(dir, ${JSON.stringify(AGENT_CONFIG_FILE)}), "utf8"));
fs.writeFileSync(path.join(dir, "stub-agent.started"), String(process.pid));
const [host, port] = [cfg.controllerAddresses[0].replace(/:\\d+$/, ""), Number(/:(\\d+)$/.exec(cfg.controllerAddresses[0])[1])];
function login() {
  const req = https.request({ host, port, method: "POST", path: "/test/login", ca: cfg.caCert, servername: ${JSON.stringify(CONTROLLER_TLS_NAME)}, headers: { "content-type": "application/json" } }, (res) => {
    res.resume();
    if (res.statusCode !== 200) setTimeout(login, 1000);
  });
  req.on("error", () => setTimeout(login, 1000));
  req.end(JSON.stringify({ model: cfg.model, machine: cfg.machine, credential: cfg.credential }));
}
login();
setInterval(() => undefined, 1 << 30);
`;

interface EnrolCall {
  method: string;
  path: string;
  token?: string;
  status: number;
}

class FakeEnrolment {
  readonly calls: EnrolCall[] = [];
  readonly tokens = new Map<string, { model: string; machine: string; spent: boolean }>();
  readonly credentials = new Map<string, string>();
  readonly logins = new Map<string, number>();
  private waiters: (() => void)[] = [];
  address = "";

  constructor(
    private readonly server: Server,
    readonly caCert: string,
  ) {}

  static async start(listen: string): Promise<FakeEnrolment> {
    const ca = await createCertificateAuthority("vsphere-test");
    const cert = await issueServerCertificate(ca, [listen]);
    let self: FakeEnrolment | undefined;
    const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => {
        body += d.toString();
      });
      req.on("end", () => {
        const { status, answer } = self!.handle(
          req.method ?? "",
          req.url ?? "",
          req.headers[ENROLMENT_HEADER] as string | undefined,
          body,
        );
        res.writeHead(status, { "content-type": "application/octet-stream" }).end(answer);
      });
    });
    self = new FakeEnrolment(server, ca.certPem);
    await new Promise<void>((r) => server.listen(0, listen, r));
    self.address = `${listen}:${(server.address() as AddressInfo).port}`;
    return self;
  }

  issue(model: string, machine: string): string {
    const token = randomBytes(32).toString("base64url");
    this.tokens.set(token, { model, machine, spent: false });
    return token;
  }

  private handle(
    method: string,
    path: string,
    token: string | undefined,
    body: string,
  ): { status: number; answer: string } {
    const record = (status: number, answer = ""): { status: number; answer: string } => {
      this.calls.push({ method, path, ...(token ? { token } : {}), status });
      return { status, answer };
    };
    if (method === "POST" && path === "/test/login") {
      const b = JSON.parse(body) as { model: string; machine: string; credential: string };
      const key = `${b.model}/${b.machine}`;
      if (this.credentials.get(key) !== b.credential) return record(401);
      this.logins.set(key, Date.now());
      for (const w of this.waiters.splice(0)) w();
      return record(200);
    }
    const t = token ? this.tokens.get(token) : undefined;
    if (!t || t.spent) return record(401);
    if (method === "GET" && path === "/v1/enrol/files/agent-bundle/main.js") return record(200, STUB_AGENT);
    if (method === "GET" && path === "/v1/enrol/files/agent-bundle/tool-client.js")
      return record(200, "// the hook-tool client (stub)\n");
    if (method === "POST" && path === "/v1/enrol") {
      t.spent = true;
      const credential = randomBytes(24).toString("base64url");
      this.credentials.set(`${t.model}/${t.machine}`, credential);
      return record(
        200,
        agentConfigText({
          model: t.model,
          machine: t.machine,
          credential,
          controllerAddresses: [this.address],
          caCert: this.caCert,
        }),
      );
    }
    return record(404);
  }

  /** Resolves once the machine's stub agent logged in. */
  async waitForLogin(model: string, machine: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.logins.has(`${model}/${machine}`)) {
      if (Date.now() > deadline)
        throw new Error(`the agent of machine ${machine} did not log in within ${timeoutMs} ms`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 500);
      });
    }
  }

  close(): Promise<void> {
    return new Promise((r) => {
      this.server.closeAllConnections();
      this.server.close(() => r());
    });
  }
}

// ---- setup ----

let lab: TestLab | undefined;
let vc: Vcsim | undefined;
let enrol: FakeEnrolment | undefined;
const controllerUuid = randomUUID();
const model = randomUUID();
const broker = new VsphereMachines();

test.before(async () => {
  if (!root && !vcsimAvailable()) return;
  if (root) {
    lab = await TestLab.create(0);
    enrol = await FakeEnrolment.start(`${lab.subnet}.1`);
  }
  vc = await startVcsim(lab);
});
test.after.always(async () => {
  broker.close();
  await vc?.stop().catch(() => undefined);
  await enrol?.close();
  await lab?.close();
});

const placement = (
  over: {
    settings?: Partial<VspherePlacement["settings"]>;
    credentials?: Partial<VspherePlacement["credentials"]>;
  } = {},
): VspherePlacement => ({
  settings: { url: vc!.url, datacenter: vc!.datacenter, template: vc!.template, caCert: vc!.caCert, ...over.settings },
  credentials: { user: vc!.user, password: vc!.password, ...over.credentials },
  controllerUuid,
});

/** A machine spec as the controller's provisioner would give it, the fake controller behind it. */
function specFor(machine: string, p = placement()): MachineSpec<VspherePlacement> & { issued: string[] } {
  const issued: string[] = [];
  return {
    model,
    machine,
    placement: p,
    issued,
    controller: { addresses: [enrol?.address ?? "127.0.0.1:1"], caCert: enrol?.caCert ?? "" },
    issueCredential: () => Promise.reject(new Error("cloud machines enrol: no credential is issued directly")),
    issueEnrolment: () => {
      const t = enrol!.issue(model, machine);
      issued.push(t);
      return Promise.resolve(t);
    },
    waitForLogin: () => enrol!.waitForLogin(model, machine, 90_000),
  };
}

const vmRef = (id: string): MoRef => new MoRef("VirtualMachine", id);
const vmCount = async (): Promise<number> =>
  (await vc!.client.propertiesUnder((await vc!.client.serviceContent()).rootFolder, "VirtualMachine", ["name"])).length;

function bridged(t: ExecutionContext, id: string): BridgedVm {
  const b = vc!.bridge!.vms.get(id);
  if (!b)
    t.fail(
      `the guest bridge booted nothing for ${id}; bridge errors: ${vc!.bridge!.errors.map((e) => e.message).join("; ")}`,
    );
  return b!;
}

// ---- the broker ----

let first: { id: string; hostIp: string } | undefined;

withLab(
  "a machine becomes a VM cloned from the template, whose guest enrols its agent from guestinfo user data",
  async (t) => {
    t.timeout(180_000);
    const spec = specFor("0");
    const steps: { at: number; step: string }[] = [];
    const t0 = Date.now();
    const vmsBefore = await vmCount();
    const res = await broker.startMachine(spec, { progress: (step) => steps.push({ at: Date.now() - t0, step }) });
    const total = Date.now() - t0;
    t.true(res.changed);
    t.regex(res.instanceId, /^vm-\d+$/);
    t.is(await vmCount(), vmsBefore + 1, "one VM cloned");
    t.is(spec.issued.length, 1, "one enrolment token issued");
    t.deepEqual(
      steps.map((s) => s.step.replace(/vm-\d+/, "vm-N")),
      [
        `cloning ${vc!.template} to VM ${vmName(controllerUuid, model, "0")}`,
        "VM vm-N cloned; powering it on",
        "VM vm-N powered on; waiting for its agent to enrol",
      ],
    );

    // The VM, as vSphere has it: named for the machine, in the datacenter's vm folder, powered on,
    // its identity and cloud-init's user data and metadata in extraConfig.
    const props = (await vc!.client.propertiesOf(vmRef(res.instanceId), [
      "name",
      "parent",
      "config.template",
      "runtime.powerState",
      "config.extraConfig",
      "guest.ipAddress",
    ]))!;
    t.is(props.get("name")?.text, `steward-${controllerUuid.slice(0, 8)}-${model.slice(0, 8)}-0`);
    t.is(props.get("config.template")?.text, "false");
    t.is(props.get("runtime.powerState")?.text, "poweredOn");
    const dcFolder = await vc!.client.findByInventoryPath(`${vc!.datacenter}/vm`);
    t.is(props.get("parent")?.text, dcFolder?.value, "in the datacenter's vm folder");
    const extra = optionValues(props.get("config.extraConfig"));
    t.is(extra.get(EXTRA_CONFIG.controller), controllerUuid);
    t.is(extra.get(EXTRA_CONFIG.model), model);
    t.is(extra.get(EXTRA_CONFIG.machine), "0");
    t.is(extra.get(EXTRA_CONFIG.userDataEncoding), "gzip+base64");
    const userData = gunzipSync(Buffer.from(extra.get(EXTRA_CONFIG.userData)!, "base64")).toString();
    t.true(userData.startsWith("#cloud-config\n"));
    t.true(userData.includes(spec.issued[0]!), "the user data carries the one-time token");
    t.false(userData.includes('credential":'), "and no credential");
    t.is(extra.get(EXTRA_CONFIG.metadataEncoding), "gzip+base64");
    t.deepEqual(JSON.parse(gunzipSync(Buffer.from(extra.get(EXTRA_CONFIG.metadata)!, "base64")).toString()), {
      "instance-id": props.get("name")?.text,
      "local-hostname": props.get("name")?.text,
    });
    const template = await vc!.client.findByInventoryPath(`${vc!.datacenter}/vm/${vc!.template}`);
    t.is(
      (await vc!.client.propertiesOf(template!, ["config.template"]))?.get("config.template")?.text,
      "true",
      "the template stays a template",
    );

    // The guest: the bridge booted a host for the VM, whose cloud-init fetched the agent with the
    // token, traded it for the agent's configuration, and started the agent, which logged in.
    const b = bridged(t, res.instanceId);
    await b.cloudInit;
    t.is(b.error, undefined, b.error?.message);
    t.is(props.get("guest.ipAddress")?.text, b.host.ip, "the guest's address is reported as VMware Tools would");
    const token = spec.issued[0]!;
    const enrolCalls = enrol!.calls.filter((c) => c.token === token).map((c) => `${c.method} ${c.path} ${c.status}`);
    t.deepEqual(enrolCalls, [
      "GET /v1/enrol/files/agent-bundle/main.js 200",
      "GET /v1/enrol/files/agent-bundle/tool-client.js 200",
      "POST /v1/enrol 200",
    ]);
    t.true(enrol!.logins.has(`${model}/0`));
    const agentDir = `/var/lib/steward/agents/${model}-0`;
    const cfg = JSON.parse((await b.host.exec(`cat ${agentDir}/${AGENT_CONFIG_FILE}`)).stdout) as {
      model: string;
      machine: string;
      credential: string;
    };
    t.is(cfg.model, model);
    t.is(cfg.machine, "0");
    t.is(cfg.credential, enrol!.credentials.get(`${model}/0`)!);
    t.is((await b.host.exec(`stat -c %a ${agentDir}/${AGENT_CONFIG_FILE}`)).stdout.trim(), "600");
    t.is(
      (
        await b.host.exec(
          `test -f ${agentDir}/stub-agent.started && test ! -e /etc/steward/enrol/${model}-0.token && echo ok`,
        )
      ).stdout.trim(),
      "ok",
      "the agent runs; the token file is gone",
    );

    // The broker lists the model's VMs with their state and the guest's address.
    t.deepEqual(await broker.instances(placement(), model), [
      { id: res.instanceId, name: props.get("name")!.text, machine: "0", state: "poweredOn", address: b.host.ip },
    ]);
    t.deepEqual(await broker.instances(placement(), randomUUID()), [], "another model has none");
    t.deepEqual(
      await broker.instances({ ...placement(), controllerUuid: randomUUID() }, model),
      [],
      "another controller has none",
    );

    const at = (re: RegExp): number => steps.find((s) => re.test(s.step))?.at ?? NaN;
    t.log(
      `timings (ms): clone ${at(/cloned/) - at(/^cloning/)}, power-on ${at(/powered on/) - at(/cloned/)}, ` +
        `bridge saw it ${b.seenAt - t0 - at(/powered on/)} after, host booted ${b.bootedAt - b.seenAt}, IP reported ${b.reportedAt! - b.bootedAt} later, ` +
        `cloud-init done ${b.cloudInitDoneAt! - b.reportedAt!} later, agent logged in at ${enrol!.logins.get(`${model}/0`)! - t0}; startMachine ${total} in all`,
    );
    first = { id: res.instanceId, hostIp: b.host.ip };
  },
);

withLab("starting the machine again leaves its running VM alone", async (t) => {
  if (!first) return t.fail("needs the first test's VM");
  const spec = specFor("0");
  const before = await vmCount();
  const steps: string[] = [];
  const res = await broker.startMachine(spec, { progress: (s) => steps.push(s) });
  t.deepEqual(res, { instanceId: first.id, changed: false });
  t.deepEqual(steps, [`VM ${first.id} is poweredOn`]);
  t.is(await vmCount(), before, "nothing cloned");
  t.is(spec.issued.length, 0, "no token issued");
});

withLab("stopping the machine powers its VM off and destroys it; its guest goes with it", async (t) => {
  if (!first) return t.fail("needs the first test's VM");
  const b = bridged(t, first.id);
  const t0 = Date.now();
  await broker.stopMachine({ model, machine: "0", placement: placement() });
  t.log(`stopMachine (power off + destroy) took ${Date.now() - t0} ms`);
  t.is(await vc!.client.propertiesOf(vmRef(first.id), ["name"]), undefined, "the VM is gone");
  t.is(await vc!.client.findByInventoryPath(`${vc!.datacenter}/vm/${vmName(controllerUuid, model, "0")}`), undefined);
  t.deepEqual(await broker.instances(placement(), model), []);
  await eventually(
    "the guest's host killed",
    async () => b.state === "destroyed" && (await b.host.processes()).length === 0,
    10_000,
    100,
  );
  await t.notThrowsAsync(
    broker.stopMachine({ model, machine: "0", placement: placement() }),
    "stopping a machine already gone is fine",
  );
});

withLab("a VM found powered off is powered on again, not cloned again", async (t) => {
  t.timeout(120_000);
  const spec = specFor("1");
  const res = await broker.startMachine(spec);
  await vc!.client.runTask("PowerOffVM_Task", vmRef(res.instanceId));
  await eventually("the guest powered off", () => bridged(t, res.instanceId).state === "off", 10_000, 100);
  t.deepEqual(
    (await broker.instances(placement(), model)).map((v) => v.state),
    ["poweredOff"],
  );
  const again = specFor("1");
  const steps: string[] = [];
  t.deepEqual(await broker.startMachine(again, { progress: (s) => steps.push(s) }), {
    instanceId: res.instanceId,
    changed: true,
  });
  t.deepEqual(steps, [`VM ${res.instanceId} is poweredOff; powering it on`]);
  t.is(again.issued.length, 0);
  await eventually("the guest running again", () => bridged(t, res.instanceId).state === "running", 10_000, 100);
  await broker.stopMachine({ model, machine: "1", placement: placement() });
  t.deepEqual(await broker.instances(placement(), model), []);
});

withLab("constraints: cores and mem size the VM before it is powered on, as vSphere then reports it", async (t) => {
  t.timeout(120_000);
  const template = await vc!.client.findByInventoryPath(`${vc!.datacenter}/vm/${vc!.template}`);
  const templateHw = (await vc!.client.propertiesOf(template!, [
    "config.hardware.numCPU",
    "config.hardware.memoryMB",
  ]))!;
  const spec = { ...specFor("4"), constraints: parseConstraints("cores=3 mem=3001M") };
  const steps: string[] = [];
  const res = await broker.startMachine(spec, { progress: (s) => steps.push(s) });
  t.deepEqual(res.hardware, { cores: 3, mem: 3004 }, "memory rounded up to vSphere's 4 MB");
  t.deepEqual(
    steps.map((s) => s.replace(/vm-\d+/, "vm-N")),
    [
      `cloning ${vc!.template} to VM ${vmName(controllerUuid, model, "4")}`,
      "VM vm-N cloned; sizing it to 3 CPUs and 3004 MB",
      "VM vm-N cloned; powering it on",
      "VM vm-N powered on; waiting for its agent to enrol",
    ],
  );
  const hw = (await vc!.client.propertiesOf(vmRef(res.instanceId), [
    "config.hardware.numCPU",
    "config.hardware.memoryMB",
    "runtime.powerState",
  ]))!;
  t.is(hw.get("config.hardware.numCPU")?.text, "3");
  t.is(hw.get("config.hardware.memoryMB")?.text, "3004");
  t.is(hw.get("runtime.powerState")?.text, "poweredOn");
  t.not(templateHw.get("config.hardware.numCPU")?.text, "3", "not the template's size by chance");
  t.not(templateHw.get("config.hardware.memoryMB")?.text, "3004");

  // Only one of them: the other stays the template's.
  const memOnly = await broker.startMachine({ ...specFor("5"), constraints: parseConstraints("mem=2G") });
  const hw5 = (await vc!.client.propertiesOf(vmRef(memOnly.instanceId), [
    "config.hardware.numCPU",
    "config.hardware.memoryMB",
  ]))!;
  t.is(hw5.get("config.hardware.memoryMB")?.text, "2048");
  t.is(hw5.get("config.hardware.numCPU")?.text, templateHw.get("config.hardware.numCPU")?.text);
  t.deepEqual(memOnly.hardware, { mem: 2048 });
  for (const m of ["4", "5"]) await broker.stopMachine({ model, machine: m, placement: placement() });
  t.deepEqual(await broker.instances(placement(), model), []);
});

withLab("constraints a VM cannot have are refused before any token is issued or anything cloned", async (t) => {
  const before = await vmCount();
  for (const text of ["root-disk=40G", "arch=arm64 cores=2", "instance-type=t3.large"]) {
    const spec = { ...specFor("6"), constraints: parseConstraints(text) };
    const err = await t.throwsAsync(broker.startMachine(spec));
    t.true(StewardError.isInstance(err) && err.code === "invalid-request", text);
    t.regex(
      err?.message ?? "",
      /^constraints: .* not supported on vsphere \(a VM is its template's architecture and disk\): give cores and mem$/,
      text,
    );
    t.is(spec.issued.length, 0, text);
  }
  t.is(await vmCount(), before, "nothing cloned");
});

withLab("a wrong password is refused as InvalidLogin, before any token is issued", async (t) => {
  const spec = specFor("7", placement({ credentials: { password: "not-the-password" } }));
  const err = await t.throwsAsync(broker.startMachine(spec));
  t.true(err instanceof VsphereFault);
  t.is(err?.message, "vSphere Login failed: InvalidLogin: Login failure");
  t.is(spec.issued.length, 0);
});

withLab(
  "a template, folder or datacenter that does not exist is named in the error, before any token is issued",
  async (t) => {
    const before = await vmCount();
    const cases: [Partial<VspherePlacement["settings"]>, RegExp][] = [
      [
        { template: "no-such-template" },
        /^vSphere template "no-such-template" not found in datacenter DC0 \(looked for DC0\/vm\/no-such-template and a VM of that name\)$/,
      ],
      [
        { template: "templates/debian" },
        /^vSphere template "templates\/debian" not found in datacenter DC0 \(looked for DC0\/vm\/templates\/debian\)$/,
      ],
      [{ folder: "steward" }, /^vSphere folder "steward" not found in datacenter DC0/],
      [
        { resourcePool: "nowhere/Resources" },
        /^vSphere resource pool "nowhere\/Resources" not found in datacenter DC0/,
      ],
      [{ datacenter: "DC9" }, /^vSphere datacenter "DC9" not found at https:\/\/127\.0\.0\.1:\d+\/sdk/],
    ];
    for (const [settings, message] of cases) {
      const spec = specFor("8", placement({ settings }));
      const err = await t.throwsAsync(broker.startMachine(spec));
      t.regex(err?.message ?? "", message);
      t.is(spec.issued.length, 0);
    }
    t.is(await vmCount(), before, "nothing cloned");
  },
);

// ---- migration: the target takes a model's VMs over (vcsim only, no root) ----

/** A powered-off VM named `name` carrying these extraConfig marks, as a controller's clone would (no guest: nothing to boot). */
async function markedVm(name: string, marks: { controller: string; model: string; machine: string }): Promise<MoRef> {
  const c = vc!.client;
  const template = await c.findByInventoryPath(`${vc!.datacenter}/vm/${vc!.template}`);
  const pool = await c.findByInventoryPath(`${vc!.datacenter}/host/DC0_C0/Resources`);
  const extraConfig = [
    [EXTRA_CONFIG.controller, marks.controller],
    [EXTRA_CONFIG.model, marks.model],
    [EXTRA_CONFIG.machine, marks.machine],
  ].map(([key, value]) => ({ key: key!, value: xsdString(value!) }));
  const vm = await c.runTask("CloneVM_Task", template!, {
    folder: (await c.findByInventoryPath(`${vc!.datacenter}/vm`))!,
    name,
    spec: { location: { pool: pool! }, template: false, config: { extraConfig }, powerOn: false },
  });
  return vmRef(vm!.text);
}

async function nameAndOwner(vm: MoRef): Promise<{ name?: string; controller?: string }> {
  const props = (await vc!.client.propertiesOf(vm, ["name", "config.extraConfig"]))!;
  const owner = optionValues(props.get("config.extraConfig")).get(EXTRA_CONFIG.controller);
  return {
    ...(props.has("name") ? { name: props.get("name")!.text } : {}),
    ...(owner !== undefined ? { controller: owner } : {}),
  };
}

withVcsim(
  "adopt: a migrated model's VMs are marked and renamed as the target's, an interrupted adoption is finished, a second one changes nothing, other VMs are left alone",
  async (t) => {
    const source = randomUUID(),
      target = randomUUID(),
      third = randomUUID(),
      moved = randomUUID(),
      other = randomUUID();
    const src: VspherePlacement = { ...placement(), controllerUuid: source },
      tgt: VspherePlacement = { ...placement(), controllerUuid: target };
    const fresh = await markedVm(vmName(source, moved, "0"), { controller: source, model: moved, machine: "0" });
    // Left by an attempt that crashed between the two calls: marked as the target's, not yet renamed.
    const halfDone = await markedVm(vmName(source, moved, "1"), { controller: target, model: moved, machine: "1" });
    // Left by an attempt that crashed between VMs: done.
    const done = await markedVm(vmName(target, moved, "2"), { controller: target, model: moved, machine: "2" });
    const otherModel = await markedVm(vmName(source, other, "0"), { controller: source, model: other, machine: "0" });
    // Named like the source's, marked as a third controller's: not the source's to give.
    const lookAlike = await markedVm(vmName(source, moved, "3"), { controller: third, model: moved, machine: "3" });
    const all = [fresh, halfDone, done, otherModel, lookAlike];
    try {
      t.deepEqual(
        (await broker.instances(src, moved)).map((v) => v.id),
        [fresh.value],
        "before: the source lists only what it still owns",
      );
      t.deepEqual(
        (await broker.instances(tgt, moved)).map((v) => v.id),
        [done.value],
      );

      t.is(await broker.adopt(tgt, moved, source), 2, "the fresh VM and the half-done one changed");
      const listed = await broker.instances(tgt, moved);
      t.deepEqual(
        listed.map((v) => v.id).sort(),
        [fresh, halfDone, done].map((v) => v.value).sort(),
        "the same VMs, nothing cloned",
      );
      for (const v of listed) t.is(v.name, vmName(target, moved, v.machine!), `VM ${v.id} carries the target's name`);
      for (const [vm, machine] of [
        [fresh, "0"],
        [halfDone, "1"],
        [done, "2"],
      ] as const)
        t.deepEqual(
          await nameAndOwner(vm),
          { name: vmName(target, moved, machine), controller: target },
          "as vSphere reports it",
        );
      t.deepEqual(await broker.instances(src, moved), [], "the source no longer finds the model's VMs");
      t.deepEqual(
        await nameAndOwner(otherModel),
        { name: vmName(source, other, "0"), controller: source },
        "another model of the source's is left alone",
      );
      t.deepEqual(
        (await broker.instances(src, other)).map((v) => v.id),
        [otherModel.value],
      );
      t.deepEqual(
        await nameAndOwner(lookAlike),
        { name: vmName(source, moved, "3"), controller: third },
        "a third controller's VM is left alone",
      );

      t.is(await broker.adopt(tgt, moved, source), 0, "a second adoption has nothing to do");
      t.deepEqual(
        (await broker.instances(tgt, moved)).map((v) => [v.id, v.name]),
        listed.map((v) => [v.id, v.name]),
      );
    } finally {
      for (const vm of all) await vc!.client.runTask("Destroy_Task", vm).catch(() => undefined);
    }
  },
);

// ---- the SOAP client (vcsim only, no root) ----

withVcsim("the SOAP client: faults name the method and the fault; an untrusted certificate is refused", async (t) => {
  const c = new VimClient({ url: vc!.url, user: vc!.user, password: vc!.password, caCert: vc!.caCert });
  try {
    const vm = await c.findByInventoryPath(`${vc!.datacenter}/vm/DC0_H0_VM1`);
    t.truthy(vm);
    const err = await t.throwsAsync(c.runTask("PowerOnVM_Task", vm!));
    t.true(err instanceof VsphereFault && err.fault === "InvalidPowerState");
    t.regex(err?.message ?? "", /^vSphere PowerOnVM_Task on vm-\d+ failed: InvalidPowerState/);
    const gone = await t.throwsAsync(c.call("PowerOnVM_Task", vmRef("vm-999999")));
    t.regex(gone?.message ?? "", /^vSphere PowerOnVM_Task failed: ManagedObjectNotFound: /);
  } finally {
    c.close();
  }
  const untrusted = new VimClient({ url: vc!.url, user: vc!.user, password: vc!.password });
  const tls = await t.throwsAsync(untrusted.findByInventoryPath("DC0"));
  t.regex(
    tls?.message ?? "",
    /^vSphere RetrieveServiceContent at 127\.0\.0\.1:\d+: .*(self-signed|unable to verify|issuer)/i,
  );
  untrusted.close();
  t.throws(() => new VimClient({ url: vc!.url.replace("https:", "http:"), user: "u", password: "p" }), {
    message: /must be https:\/\//,
  });
});

withVcsim("the SOAP client logs in again once when its session is gone", async (t) => {
  const c = new VimClient({ url: vc!.url, user: vc!.user, password: vc!.password, caCert: vc!.caCert });
  try {
    t.truthy(await c.findByInventoryPath("DC0"));
    // Ends the session under the client's feet (as a vCenter restart or a session timeout would).
    await c.call("Logout", (await c.serviceContent()).sessionManager);
    t.is((await c.findByInventoryPath("DC0"))?.type, "Datacenter");
  } finally {
    c.close();
  }
});

withVcsim("XML: every value sent is escaped, and read back as sent", async (t) => {
  const nasty = `a<b>&"c'd</val></propSet>]]>\u00e9\u{1F600}`;
  t.is(
    toXml("value", xsdString(nasty)),
    `<value xsi:type="xsd:string">a&lt;b&gt;&amp;&quot;c&apos;d&lt;/val&gt;&lt;/propSet&gt;]]&gt;\u00e9\u{1F600}</value>`,
  );
  t.throws(() => toXml("value", "bell\u0007"), { message: /characters XML cannot carry/ });
  t.throws(() => toXml("a b", "x"), { message: /not an XML element name/ });
  const doc = parseXml(
    `<?xml version="1.0"?><r xmlns:q="http://www.w3.org/2001/XMLSchema-instance"><v q:type="xsd:string">x &lt;&#65;&#x42;&gt; <![CDATA[<raw>]]></v><m type="Folder">group-1</m></r>`,
  );
  t.is(doc.children[0]!.text, "x <AB> <raw>");
  t.is(doc.children[0]!.xsiType, "string");
  t.throws(() => parseXml(`<!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>`), { message: /DOCTYPE/ });
  t.throws(() => parseXml(`<r><a></r>`), { message: /does not close/ });

  // A VM whose name and extraConfig hold XML's special characters, through vcsim and back.
  const c = vc!.client;
  const template = await c.findByInventoryPath(`${vc!.datacenter}/vm/${vc!.template}`);
  const pool = await c.findByInventoryPath(`${vc!.datacenter}/host/DC0_C0/Resources`);
  const name = `xml <&> "test" ${randomBytes(3).toString("hex")}`;
  const vm = (await c.runTask("CloneVM_Task", template!, {
    folder: (await c.findByInventoryPath(`${vc!.datacenter}/vm`))!,
    name,
    spec: {
      location: { pool: pool! },
      template: false,
      config: { extraConfig: [{ key: "guestinfo.nasty", value: xsdString(nasty) }] },
      powerOn: false,
    },
  }))!;
  const props = (await c.propertiesOf(new MoRef("VirtualMachine", vm.text), ["name", "config.extraConfig"]))!;
  t.is(props.get("name")?.text, name);
  t.is(optionValues(props.get("config.extraConfig")).get("guestinfo.nasty"), nasty);
  await c.runTask("Destroy_Task", new MoRef("VirtualMachine", vm.text));
});
