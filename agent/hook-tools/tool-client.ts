/**
 * The client every hook tool runs (`status-set`, `config-get`, …): sends its name and arguments to
 * the agent's socket and prints what comes back. Deliberately imports nothing but `net`, so a tool
 * call costs one bare Node start. It sends the hook's working directory (tools resolve relative
 * paths against it) and, for the tools that read it, its standard input. A process a hook left
 * running still has its unit's context (STEWARD_UNIT_CONTEXT_ID) for the few tools allowed outside hooks.
 */
import { connect } from "node:net";

/** Tools that take their input on stdin when not given a file (the agent cannot read the hook's stdin itself). */
const READS_STDIN = new Set(["container-layer-set"]);
/** Tools that read stdin only when told `--file -` (a secret's values kept out of argv, which `ps` shows). */
const READS_STDIN_ON_DASH = new Set(["secret-add", "secret-set"]);
/** Tools that pass stdin on only when told `--stdin` (before `--`): container-exec, whose command may not read it. */
const READS_STDIN_ON_FLAG = new Set(["container-exec"]);
/** As MAX_TOOL_STDIN in server.ts (not imported: this client stays bare). */
const MAX_STDIN = 1024 * 1024;

const [tool, ...args] = process.argv.slice(2);
const socketPath = process.env.STEWARD_AGENT_SOCKET;
const context = process.env.STEWARD_CONTEXT_ID;
const unitContext = process.env.STEWARD_UNIT_CONTEXT_ID;
if (!socketPath || !(context || unitContext) || !tool) {
  process.stderr.write(
    `${tool ?? "hook tool"}: must be run from a hook (STEWARD_AGENT_SOCKET and STEWARD_CONTEXT_ID are not set)\n`,
  );
  process.exit(2);
}

/** The hook's stdin, up to MAX_STDIN bytes (a hook's stdin is /dev/null unless it pipes something in). */
async function readStdin(): Promise<string | undefined> {
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

const fileIndex = args.findIndex((a) => a === "--file" || a === "-f");
const fileGiven =
  (fileIndex >= 0 && args[fileIndex + 1] !== "-") || args.some((a) => /^(--file|-f)=./.test(a) && !/=-$/.test(a));
const dashGiven = (fileIndex >= 0 && args[fileIndex + 1] === "-") || args.some((a) => /^(--file|-f)=-$/.test(a));
/** The tool's own arguments: what follows `--` is a command's (container-exec), whose -h is not a plea for help. */
const ownArgs = args.includes("--") ? args.slice(0, args.indexOf("--")) : args;
const wantsStdin =
  !ownArgs.includes("--help") &&
  !ownArgs.includes("-h") &&
  ((READS_STDIN.has(tool!) && !fileGiven) ||
    (READS_STDIN_ON_DASH.has(tool!) && dashGiven) ||
    (READS_STDIN_ON_FLAG.has(tool!) && ownArgs.includes("--stdin")));
void (wantsStdin ? readStdin() : Promise.resolve(undefined)).then((stdin) => {
  const sock = connect(socketPath!);
  let buf = "";
  sock.on("connect", () =>
    sock.write(
      JSON.stringify({
        context,
        ...(unitContext ? { unitContext } : {}),
        tool,
        args,
        cwd: process.cwd(),
        ...(stdin !== undefined ? { stdin } : {}),
      }) + "\n",
    ),
  );
  sock.on("data", (d: Buffer) => {
    buf += d.toString("utf8");
  });
  sock.on("error", (err) => {
    process.stderr.write(`${tool}: cannot reach the agent: ${err.message}\n`);
    process.exit(2);
  });
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
});
