/**
 * The controller notices agents that stopped answering: an agent connection that sends nothing and
 * does not answer pings (a frozen process, a host cut off without a FIN) is closed, so its machine
 * shows down instead of started forever. Connections that answer pings, or ping by themselves as
 * real agents do, stay. Runs with a short liveness period (transport.agentLivenessMs).
 */
import test from "ava";
import WebSocket from "ws";
import { CONTROLLER_TLS_NAME } from "../api";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

const LIVENESS_MS = 600;

let tc: TestController;
test.before(async () => {
  tc = await startTestController({ transport: { agentLivenessMs: LIVENESS_MS } });
});
test.after.always(async () => {
  await tc?.close();
});

/** An agent's WebSocket; `autoPong: false` makes it one that never answers the controller's pings. */
async function connect(
  model: string /* uuid */,
  machine: string,
  credential: string,
  autoPong: boolean,
): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(`wss://${tc.addresses[0]}/v1/agent`, {
    ca: tc.caCert,
    servername: CONTROLLER_TLS_NAME,
    autoPong,
    headers: { authorization: `Agent ${model}/${machine}/${credential}` },
  } as WebSocket.ClientOptions);
  const closed = new Promise<number>((resolve) => ws.once("close", (code: number) => resolve(code)));
  ws.on("error", () => undefined);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  // As a real agent does on connecting: a machine known to have had an agent shows down, not pending, once it goes.
  ws.send(
    JSON.stringify({
      t: "req",
      id: 1,
      method: "machine.info",
      params: { hostname: `h${machine}`, address: "127.0.0.1", os: "linux", agentVersion: "test" },
    }),
  );
  return { ws, closed };
}

const machineStatus = async (model: string, id: string): Promise<string | undefined> =>
  (await tc.admin.status(model)).machines[id]?.status.current;

test("an agent that answers nothing is dropped and its machine shows down; answering ones stay", async (t) => {
  const { uuid } = await tc.admin.createModel("live");
  const [silentM, pongM, pingM] = (await tc.admin.addMachines("live", "manual", 3)).machines;
  const silent = await connect(uuid, silentM!.id, silentM!.credential!, false);
  const answering = await connect(uuid, pongM!.id, pongM!.credential!, true);
  // Pings of its own (as real agents send every 5 s) prove it alive without the controller asking.
  const pinging = await connect(uuid, pingM!.id, pingM!.credential!, false);
  const pinger = setInterval(() => pinging.ws.ping(), LIVENESS_MS / 3);
  try {
    await eventually(
      "all three machines started",
      async () =>
        (await Promise.all([silentM, pongM, pingM].map((m) => machineStatus("live", m!.id)))).every(
          (s) => s === "started",
        ),
      10_000,
    );
    // Within three periods the silent one is closed by the controller (1006: terminated, no close frame).
    const code = await Promise.race([
      silent.closed,
      new Promise<string>((resolve) => setTimeout(() => resolve("still open"), LIVENESS_MS * 3 + 2000)),
    ]);
    t.is(code, 1006, "the silent agent's connection was closed by the controller");
    await eventually(
      "the silent agent's machine shown down",
      async () => (await machineStatus("live", silentM!.id)) === "down",
      10_000,
    );
    // The others lived through the same periods and more.
    await new Promise((resolve) => setTimeout(resolve, LIVENESS_MS * 3));
    t.is(answering.ws.readyState, WebSocket.OPEN, "an agent answering pings stays connected");
    t.is(pinging.ws.readyState, WebSocket.OPEN, "an agent pinging by itself stays connected");
    t.is(await machineStatus("live", pongM!.id), "started");
    t.is(await machineStatus("live", pingM!.id), "started");
  } finally {
    clearInterval(pinger);
    for (const c of [silent, answering, pinging]) c.ws.terminate();
  }
});
