/**
 * The client every hook tool runs (`status-set`, `config-get`, …): sends its name and arguments to
 * the agent's socket and prints what comes back. Deliberately imports nothing but `net`, so a tool
 * call costs one bare Node start.
 */
import { connect } from "node:net";

const [tool, ...args] = process.argv.slice(2);
const socketPath = process.env.STEWARD_AGENT_SOCKET;
const context = process.env.STEWARD_CONTEXT_ID;
if (!socketPath || !context || !tool) {
  process.stderr.write(`${tool ?? "hook tool"}: must be run from a hook (STEWARD_AGENT_SOCKET and STEWARD_CONTEXT_ID are not set)\n`);
  process.exit(2);
}
const sock = connect(socketPath);
let buf = "";
sock.on("connect", () => sock.write(JSON.stringify({ context, tool, args }) + "\n"));
sock.on("data", (d: Buffer) => { buf += d.toString("utf8"); });
sock.on("error", (err) => { process.stderr.write(`${tool}: cannot reach the agent: ${err.message}\n`); process.exit(2); });
sock.on("end", () => {
  try {
    const res = JSON.parse(buf) as { code: number; stdout?: string; stderr?: string };
    if (res.stdout) process.stdout.write(res.stdout);
    if (res.stderr) process.stderr.write(res.stderr);
    process.exitCode = res.code;
  } catch {
    process.stderr.write(`${tool}: the agent sent an unreadable answer\n`);
    process.exitCode = 2;
  }
});
