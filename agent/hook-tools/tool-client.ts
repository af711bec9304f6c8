/**
 * How a hook reaches the agent's tools (`status-set`, `config-get`, …), in two forms over one protocol:
 *
 * - the program every tool's wrapper runs: it sends its name and arguments to the agent's socket and
 *   prints what comes back, for hooks in any language;
 * - for operators written in Node, the same call in-process and synchronous:
 *   `require(process.env.STEWARD_TOOLS_MODULE).runTool("config-get", ["--format", "json"])`. A program
 *   costs the start of a Node process, about 100 ms on a small machine, so a hook that calls twenty
 *   tools spent two seconds starting them; in-process a call costs a round trip on the socket.
 *
 * It sends the hook's working directory (tools resolve relative paths against it) and, for the tools
 * that read it, the input. A process a hook left running still has its unit's context
 * (STEWARD_UNIT_CONTEXT_ID) for the few tools allowed outside hooks. Deliberately imports nothing but
 * Node's own modules, so a program costs one bare Node start.
 */
import { connect } from "node:net";
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { MessagePort } from "node:worker_threads";

/** Tools that take their input on stdin when not given a file (the agent cannot read the hook's stdin itself). */
const READS_STDIN = new Set(["container-layer-set"]);
/** Tools that read stdin only when told `--file -` (a secret's values kept out of argv, which `ps` shows). */
const READS_STDIN_ON_DASH = new Set(["secret-add", "secret-set"]);
/** Tools that pass stdin on only when told `--stdin` (before `--`): container-exec, whose command may not read it. */
const READS_STDIN_ON_FLAG = new Set(["container-exec"]);
/** As MAX_TOOL_STDIN in server.ts (not imported: this client stays bare). */
const MAX_STDIN = 1024 * 1024;

/** What a tool answered: its exit code (0 done, 1 refused, 2 misuse or no agent) and its output. */
export interface ToolOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Whether `tool` called with `args` reads input (standard input for the program, `input` in-process). */
export function takesInput(tool: string, args: readonly string[]): boolean {
  const fileIndex = args.findIndex((a) => a === "--file" || a === "-f");
  const fileGiven =
    (fileIndex >= 0 && args[fileIndex + 1] !== "-") || args.some((a) => /^(--file|-f)=./.test(a) && !/=-$/.test(a));
  const dashGiven = (fileIndex >= 0 && args[fileIndex + 1] === "-") || args.some((a) => /^(--file|-f)=-$/.test(a));
  /** The tool's own arguments: what follows `--` is a command's (container-exec), whose -h is not a plea for help. */
  const ownArgs = args.includes("--") ? args.slice(0, args.indexOf("--")) : args;
  return (
    !ownArgs.includes("--help") &&
    !ownArgs.includes("-h") &&
    ((READS_STDIN.has(tool) && !fileGiven) ||
      (READS_STDIN_ON_DASH.has(tool) && dashGiven) ||
      (READS_STDIN_ON_FLAG.has(tool) && ownArgs.includes("--stdin")))
  );
}

/** The misuse outcome when this process is neither a hook's nor one its unit left running. */
function outsideHook(tool: string): ToolOutcome | undefined {
  if (process.env.STEWARD_AGENT_SOCKET && (process.env.STEWARD_CONTEXT_ID || process.env.STEWARD_UNIT_CONTEXT_ID))
    return undefined;
  return {
    code: 2,
    stdout: "",
    stderr: `${tool}: must be run from a hook (STEWARD_AGENT_SOCKET and STEWARD_CONTEXT_ID are not set)\n`,
  };
}

/** The request line for the agent, or the refusal of an input too large to send. */
function requestLine(tool: string, args: readonly string[], stdin: string | undefined): string | ToolOutcome {
  const context = process.env.STEWARD_CONTEXT_ID;
  const unitContext = process.env.STEWARD_UNIT_CONTEXT_ID;
  if (stdin !== undefined && Buffer.byteLength(stdin) > MAX_STDIN)
    return { code: 1, stdout: "", stderr: `${tool}: the input is larger than ${MAX_STDIN} bytes\n` };
  return (
    JSON.stringify({
      context,
      ...(unitContext ? { unitContext } : {}),
      tool,
      args,
      cwd: process.cwd(),
      ...(stdin !== undefined ? { stdin } : {}),
    }) + "\n"
  );
}

/** The agent's answer as an outcome (an unreadable one is the client's misuse code). */
function outcomeOf(tool: string, answer: string): ToolOutcome {
  try {
    const res = JSON.parse(answer) as { code: number; stdout?: string; stderr?: string };
    return { code: res.code, stdout: res.stdout ?? "", stderr: res.stderr ?? "" };
  } catch {
    return { code: 2, stdout: "", stderr: `${tool}: the agent sent an unreadable answer\n` };
  }
}

// In-process calls: a worker thread does the socket's I/O while the caller waits on a shared flag,
// so a Node operator keeps the synchronous style of execFileSync without starting a process.
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { connect } = require("node:net");
const port = workerData.port;
port.on("message", ({ id, socketPath, line, flag }) => {
  let buf = "";
  let settled = false;
  const done = (answer, failure) => {
    if (settled) return;
    settled = true;
    port.postMessage({ id, answer, failure });
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  };
  try {
    const sock = connect(socketPath);
    sock.on("connect", () => sock.write(line));
    sock.on("data", (d) => (buf += d.toString("utf8")));
    sock.on("error", (err) => done(undefined, err.message));
    sock.on("end", () => done(buf));
    sock.on("close", () => done(buf));
  } catch (err) {
    // The caller waits on the flag with no end of its own: every request is answered.
    done(undefined, String(err && err.message));
  }
});
`;

let channel: { worker: Worker; port: MessagePort } | undefined;
let lastId = 0;

function inProcessChannel(): { worker: Worker; port: MessagePort } {
  if (channel) return channel;
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { port: port2 }, transferList: [port2] });
  // Neither keeps the operator's process alive once its own work is done.
  worker.unref();
  port1.unref();
  channel = { worker, port: port1 };
  return channel;
}

/**
 * Runs hook tool `tool` with `args` in this process and waits for its answer, as the program would
 * (same exit codes and output; `input` is what the program would read on stdin). Never throws.
 * `timeoutMs` bounds the wait (none by default, as for the program: container-exec may run long).
 */
export function runTool(
  tool: string,
  args: readonly string[] = [],
  options: { input?: string; timeoutMs?: number } = {},
): ToolOutcome {
  const misuse = outsideHook(tool);
  if (misuse) return misuse;
  const line = requestLine(tool, args, takesInput(tool, args) ? (options.input ?? "") : undefined);
  if (typeof line !== "string") return line;
  const { port } = inProcessChannel();
  const id = ++lastId;
  const flag = new Int32Array(new SharedArrayBuffer(4));
  port.postMessage({ id, socketPath: process.env.STEWARD_AGENT_SOCKET, line, flag });
  const waited = Atomics.wait(flag, 0, 0, options.timeoutMs ?? Infinity);
  if (waited === "timed-out")
    return { code: 2, stdout: "", stderr: `${tool}: the agent did not answer in ${options.timeoutMs} ms\n` };
  // Answers of calls that timed out earlier may be queued before this one's.
  for (let msg = receiveMessageOnPort(port); msg; msg = receiveMessageOnPort(port)) {
    const { id: of, answer, failure } = msg.message as { id: number; answer?: string; failure?: string };
    if (of !== id) continue;
    if (failure !== undefined) return { code: 2, stdout: "", stderr: `${tool}: cannot reach the agent: ${failure}\n` };
    return outcomeOf(tool, answer ?? "");
  }
  return { code: 2, stdout: "", stderr: `${tool}: the agent's answer was lost\n` };
}

/** The hook's stdin, up to MAX_STDIN bytes (a hook's stdin is /dev/null unless it pipes something in). */
async function readStdin(tool: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_STDIN) {
      process.stderr.write(`${tool}: the input is larger than ${MAX_STDIN} bytes\n`);
      process.exit(1);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The program: `tool-client.js TOOL ARGS…`, run by each tool's wrapper. */
async function main(): Promise<void> {
  const [tool = "hook tool", ...args] = process.argv.slice(2);
  const misuse = outsideHook(tool);
  if (misuse) {
    process.stderr.write(misuse.stderr);
    process.exit(misuse.code);
  }
  const line = requestLine(tool, args, takesInput(tool, args) ? await readStdin(tool) : undefined);
  if (typeof line !== "string") {
    process.stderr.write(line.stderr);
    process.exit(line.code);
  }
  const sock = connect(process.env.STEWARD_AGENT_SOCKET!);
  let buf = "";
  sock.on("connect", () => sock.write(line));
  sock.on("data", (d: Buffer) => {
    buf += d.toString("utf8");
  });
  sock.on("error", (err) => {
    process.stderr.write(`${tool}: cannot reach the agent: ${err.message}\n`);
    process.exit(2);
  });
  sock.on("end", () => {
    const res = outcomeOf(tool, buf);
    if (res.stdout) process.stdout.write(res.stdout);
    if (res.stderr) process.stderr.write(res.stderr);
    process.exitCode = res.code;
  });
}

if (require.main === module) void main();
