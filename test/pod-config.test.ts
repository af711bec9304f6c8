/**
 * What a pod's agent takes from Kubernetes: its ordinal from the pod's name, its identity from the
 * downward API, and which agent configuration wins between the mounted Secret and the claim.
 */
import test from "ava";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { AgentConfig, StewardError } from "../api";
import { AGENT_CONFIG_FILE, agentConfigText, ordinalOfPod, podAgentConfigKey } from "../api";
import { adoptMountedConfig, podIdentity } from "../agent";

const mounted: AgentConfig = {
  model: "m-uuid",
  machine: "3",
  credential: "cred-new",
  controllerAddresses: ["10.0.0.1:17070"],
  caCert: "CA",
};

test("a pod's ordinal is its name's trailing number; a name without one is refused saying how to fix it", (t) => {
  t.is(ordinalOfPod("db-0"), 0);
  t.is(ordinalOfPod("my-db-12"), 12);
  t.is(podAgentConfigKey(12), "agent-12.conf");
  for (const name of ["db", "db-", "db-x", "db-1a", "", "db-12345678901"]) {
    const err = t.throws<StewardError>(() => ordinalOfPod(name), undefined, name);
    t.is(err?.code, "invalid-request");
    t.regex(err?.message ?? "", /does not end in -<ordinal>.*set POD_NAME from the pod's metadata\.name/);
  }
  t.throws(() => podAgentConfigKey(-1), { message: /a pod ordinal is a whole number from 0 \(got -1\)/ });
});

test("the pod's identity comes from POD_NAME and POD_UID (POD_IP optional), each named when missing", (t) => {
  t.deepEqual(podIdentity({ POD_NAME: "db-2", POD_UID: "u-1", POD_IP: "10.1.2.3" }), {
    name: "db-2",
    ordinal: 2,
    uid: "u-1",
    ip: "10.1.2.3",
  });
  t.deepEqual(podIdentity({ POD_NAME: "db-2", POD_UID: "u-1" }), { name: "db-2", ordinal: 2, uid: "u-1" });
  t.throws(() => podIdentity({ POD_UID: "u" }), { message: /POD_NAME is not set.*fieldRef metadata\.name/ });
  t.throws(() => podIdentity({ POD_NAME: "db-2" }), { message: /POD_UID is not set.*fieldRef metadata\.uid/ });
});

test("the mounted configuration is written to a claim without one, or with another machine or credential; the same one is kept", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-podcfg-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const inDir = async (): Promise<AgentConfig> =>
    JSON.parse(await readFile(join(dir, AGENT_CONFIG_FILE), "utf8")) as AgentConfig;
  const claim = join(dir, "claim");
  const atClaim = async (): Promise<AgentConfig> =>
    JSON.parse(await readFile(join(claim, AGENT_CONFIG_FILE), "utf8")) as AgentConfig;

  t.is(await adoptMountedConfig(claim, mounted), "created", "a new claim (its directory made)");
  t.deepEqual(await atClaim(), mounted);

  // Same machine and credential: the agent's own file stays, with the addresses it saved.
  const saved = { ...mounted, controllerAddresses: ["10.0.0.1:17070", "10.0.0.2:17070"] };
  await writeFile(join(dir, AGENT_CONFIG_FILE), agentConfigText(saved));
  t.is(await adoptMountedConfig(dir, mounted), "kept");
  t.deepEqual(await inDir(), saved);

  // A new credential for the same machine keeps the unit's hook state; another machine (a new unit
  // given a reused number) does not inherit the old unit's.
  const unitState = join(dir, "units", "db-3", "state.json");
  for (const [other, stateKept] of [
    [{ ...saved, credential: "cred-old" }, true],
    [{ ...saved, machine: "4" }, false],
    [{ ...saved, model: "other-model" }, false],
  ] as const) {
    await mkdir(dirname(unitState), { recursive: true });
    await writeFile(unitState, "{}");
    await writeFile(join(dir, AGENT_CONFIG_FILE), agentConfigText(other));
    t.is(await adoptMountedConfig(dir, mounted), "replaced");
    t.deepEqual(await inDir(), mounted);
    t.is(
      existsSync(unitState),
      stateKept,
      `unit state ${stateKept ? "kept" : "dropped"} for ${JSON.stringify(other).slice(0, 60)}`,
    );
  }
  await writeFile(join(dir, AGENT_CONFIG_FILE), "{ half written");
  t.is(await adoptMountedConfig(dir, mounted), "replaced", "an unreadable one is replaced");
  t.deepEqual(await inDir(), mounted);
});
