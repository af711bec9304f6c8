/**
 * Times `status` calls from a process of its own, as a user's CLI or dashboard makes them: the
 * benchmark process also holds thousands of simulated agents, whose garbage collection would land
 * in the figures. Run by controller-scale with its settings as JSON in argv[2]; prints the
 * latencies (ms) as JSON.
 */
import { Agent, get } from "node:https";
import { CONTROLLER_TLS_NAME, ControllerClient, splitAddress } from "../api/core";

export interface StatusProbeSettings {
  addresses: string[];
  caCert: string;
  password: string;
  model: string;
  runs: number;
  /** Units to ask for one at a time in the filtered runs. */
  units: string[];
}

/**
 * Latencies (ms): whole documents read as the client reads them (the compact form, parsed and
 * expanded), the same bytes only received, the plain JSON document parsed, one unit's document;
 * sizes of the compact and the plain form.
 */
export interface StatusProbeResult {
  full: number[];
  received: number[];
  plain: number[];
  filtered: number[];
  bytes: number;
  plainBytes: number;
}

/** Receives a GET's whole body, parsed only if `parse`: how much of a read is the controller and the wire. */
function receive(agent: Agent, address: string, path: string, token: string, parse = false): Promise<number> {
  const [host, port] = splitAddress(address);
  return new Promise((resolve, reject) => {
    get(
      { host, port, path, agent, servername: CONTROLLER_TLS_NAME, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          if (res.statusCode !== 200) {
            reject(new Error(`status ${res.statusCode}`));
            return;
          }
          const body = Buffer.concat(chunks);
          if (parse) JSON.parse(body.toString("utf8"));
          resolve(body.length);
        });
        res.on("error", reject);
      },
    ).on("error", reject);
  });
}

async function probe(s: StatusProbeSettings): Promise<StatusProbeResult> {
  const client = new ControllerClient({
    addresses: s.addresses,
    caCert: s.caCert,
    user: "admin",
    password: s.password,
  });
  const timed = async (f: () => Promise<unknown>): Promise<number> => {
    const t = process.hrtime.bigint();
    await f();
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  try {
    const first = await client.status(s.model); // logs in and opens the connection, as a poller's first call would
    const full: number[] = [];
    for (let i = 0; i < s.runs; i++) full.push(await timed(() => client.status(s.model)));
    const agent = new Agent({ keepAlive: true, ca: s.caCert });
    const path = `/v1/models/${encodeURIComponent(s.model)}/status`;
    const received: number[] = [];
    for (let i = 0; i < s.runs; i++)
      received.push(await timed(() => receive(agent, s.addresses[0]!, `${path}?format=columns`, client.currentToken!)));
    const plain: number[] = [];
    for (let i = 0; i < s.runs; i++)
      plain.push(await timed(() => receive(agent, s.addresses[0]!, path, client.currentToken!, true)));
    const bytes = await receive(agent, s.addresses[0]!, `${path}?format=columns`, client.currentToken!);
    const plainBytes = await receive(agent, s.addresses[0]!, path, client.currentToken!);
    agent.destroy();
    const filtered: number[] = [];
    for (let i = 0; i < s.runs; i++)
      filtered.push(await timed(() => client.status(s.model, { units: [s.units[i % s.units.length]!] })));
    if (Object.keys(first.applications).length === 0)
      throw new Error("the status probe read a model with no applications");
    return { full, received, plain, filtered, bytes, plainBytes };
  } finally {
    client.close();
  }
}

if (require.main === module) {
  probe(JSON.parse(process.argv[2]!) as StatusProbeSettings).then(
    (r) => process.stdout.write(JSON.stringify(r)),
    (err: unknown) => {
      process.stderr.write(`status probe: ${String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
