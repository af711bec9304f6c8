/**
 * The hook tools that drive a unit's workload containers through their supervisors (Kubernetes
 * only; Juju's Pebble client in a charm): set a container's layer, start/stop/restart its
 * services, list them, exec a command, push and pull files. They act at once (nothing waits for
 * the hook to commit). Off Kubernetes, or for a container the pod does not have, they refuse.
 */
import { readFile, writeFile } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import type * as Yaml from "yaml";
import { LayerError, checkLayer } from "../workload/layer";
import type { ExecResult, PullResult, ReplanResult, ServiceInfo } from "../workload/protocol";
import { DEFAULT_EXEC_TIMEOUT_MS, MAX_EXEC_TIMEOUT_MS, MAX_FILE_BYTES } from "../workload/protocol";
import type { SupervisorClient } from "../workload/supervisor-client";
import { SupervisorError } from "../workload/supervisor-client";
import type { HookContext, ToolIO, ToolSpec } from "./tool-spec";
import { ToolError, json, misuse, ok, refuse } from "./tool-spec";

/** Starting and stopping wait for services' kill-delay (at most 5 min): longer than that is a stuck supervisor. */
const SERVICE_CALL_MS = 330_000;

/** The supervisor of the container a tool names (first positional), or the refusal saying why not. */
async function supervisorOf(
  ctx: HookContext,
  tool: string,
  name: string | undefined,
  usage: string,
): Promise<SupervisorClient> {
  if (!name) throw new ToolError(misuse(tool, "name the workload container", usage));
  if (!ctx.workload)
    throw new ToolError(
      refuse(
        tool,
        `${ctx.unit} has no workload containers: they run only in Kubernetes pods, declared under containers: in operator.yaml`,
      ),
    );
  const known = await ctx.workload.containers();
  if (!known.includes(name))
    throw new ToolError(
      refuse(
        tool,
        `no workload container "${name}" in this pod (containers: ${known.join(", ") || "none yet: their supervisors have not started"})`,
      ),
    );
  return ctx.workload.client(name);
}

/** A supervisor's refusal or absence as the tool's refusal (exit 1). */
async function call<T>(tool: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof SupervisorError) throw new ToolError(refuse(tool, err.message));
    throw err;
  }
}

const inCwd = (io: ToolIO, path: string): string => (isAbsolute(path) ? path : resolve(io.cwd ?? process.cwd(), path));

/** A layer file's text as data: JSON, or YAML (loaded only here: the agent never parses YAML otherwise). */
function parseLayerText(text: string, source: string): unknown {
  const trimmed = text.trim();
  if (trimmed === "") throw new LayerError("", `${source} is empty: give a layer with services`);
  if (trimmed.startsWith("{")) {
    try {
      return JSON.parse(trimmed);
    } catch {
      /* YAML flow mappings start with { too */
    }
  }
  const yaml = require("yaml") as typeof Yaml;
  const doc = yaml.parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0)
    throw new LayerError("", `${source} is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  return doc.toJS({ maxAliasCount: 100 });
}

function serviceTool(op: "start" | "stop" | "restart", summary: string): ToolSpec {
  const name = `container-${op}`;
  return {
    usage: `${name} CONTAINER SERVICE [SERVICE...]`,
    summary,
    flags: {},
    async run(ctx, _f, pos) {
      const [container, ...services] = pos;
      if (services.length === 0) return misuse(name, "name the container and at least one service", this.usage);
      const sup = await supervisorOf(ctx, name, container, this.usage);
      await call(name, () => sup.call({ op, services }, SERVICE_CALL_MS));
      return ok();
    },
  };
}

function servicesText(list: ServiceInfo[]): string {
  if (list.length === 0) return "";
  const rows = [
    ["SERVICE", "STARTUP", "CURRENT", "RESTARTS", "NOTES"],
    ...list.map((s) => [
      s.name,
      s.startup,
      s.current,
      String(s.restarts),
      s.message ?? (s.lastExit ? `last exit ${s.lastExit.signal ?? `code ${s.lastExit.code}`}` : ""),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map(
      (r) =>
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join("  ")
          .trimEnd() + "\n",
    )
    .join("");
}

function mode(tool: string, text: string | true | undefined, usage: string): number | undefined {
  if (text === undefined) return undefined;
  if (typeof text !== "string" || !/^0?[0-7]{3,4}$/.test(text))
    throw new ToolError(misuse(tool, `--mode must be an octal file mode such as 0644 (got ${String(text)})`, usage));
  return parseInt(text, 8);
}

export const containerTools: Record<string, ToolSpec> = {
  "container-layer-set": {
    usage:
      "container-layer-set CONTAINER [--file LAYER.yaml]   (without --file, or with --file -, the layer is read from stdin)",
    summary:
      "set a workload container's layer (its services: command, environment, working-dir, startup, on-success/on-failure, back-off) and replan: services gone are stopped, changed running ones restarted, startup: enabled ones started",
    flags: { "--file": "value", "-f": "value" },
    async run(ctx, f, pos, io) {
      if (pos.length !== 1) return misuse("container-layer-set", "name exactly one container", this.usage);
      const file = f["--file"] ?? f["-f"];
      let text: string, source: string;
      if (typeof file === "string" && file !== "-") {
        source = file;
        const path = inCwd(io, file);
        try {
          text = await readFile(path, "utf8");
        } catch (err) {
          return refuse("container-layer-set", `cannot read ${file}: ${(err as Error).message}`);
        }
      } else {
        source = "the layer on stdin";
        text = io.stdin ?? "";
      }
      let raw: unknown;
      try {
        raw = parseLayerText(text, source);
        checkLayer(raw);
      } catch (err) {
        if (err instanceof LayerError) return refuse("container-layer-set", `${source}: ${err.message}`);
        throw err;
      }
      const sup = await supervisorOf(ctx, "container-layer-set", pos[0], this.usage);
      const plan = await call("container-layer-set", () =>
        sup.call<ReplanResult>({ op: "layer", layer: raw }, SERVICE_CALL_MS),
      );
      const said = (["started", "restarted", "stopped"] as const)
        .filter((k) => plan[k].length > 0)
        .map((k) => `${k}: ${plan[k].join(", ")}`);
      return ok(said.length > 0 ? said.join("; ") + "\n" : "");
    },
  },
  "container-start": serviceTool(
    "start",
    "start services of a workload container (those running are left as they are)",
  ),
  "container-stop": serviceTool(
    "stop",
    "stop services of a workload container (SIGTERM, then SIGKILL after their kill-delay)",
  ),
  "container-restart": serviceTool("restart", "stop then start services of a workload container"),
  "container-services": {
    usage: "container-services CONTAINER [--format text|json]",
    summary:
      "list a workload container's services with their state (inactive, active, backoff, error), restarts and last exit",
    flags: { "--format": "value" },
    async run(ctx, f, pos) {
      if (pos.length !== 1) return misuse("container-services", "name exactly one container", this.usage);
      if (f["--format"] !== undefined && f["--format"] !== "text" && f["--format"] !== "json")
        return misuse("container-services", "--format must be text or json", this.usage);
      const sup = await supervisorOf(ctx, "container-services", pos[0], this.usage);
      const list = await call("container-services", () => sup.call<ServiceInfo[]>({ op: "services" }));
      return ok(f["--format"] === "json" ? json(list) : servicesText(list));
    },
  },
  "container-exec": {
    usage: "container-exec CONTAINER [--timeout SECONDS] [--workdir DIR] [--stdin] -- COMMAND [ARG...]",
    summary: `run a command in a workload container (no shell) and print its output; exits with the command's exit code (124 when it outlives --timeout, default ${DEFAULT_EXEC_TIMEOUT_MS / 1000} s); --stdin gives it the hook's standard input (SQL, a password: never argv)`,
    flags: { "--timeout": "value", "--workdir": "value", "--stdin": "bool" },
    async run(ctx, f, pos, io) {
      const [container, ...command] = pos;
      if (command.length === 0)
        return misuse("container-exec", "name the container and the command to run (after --)", this.usage);
      const t = f["--timeout"];
      const seconds = t === undefined ? DEFAULT_EXEC_TIMEOUT_MS / 1000 : Number(t);
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds * 1000 > MAX_EXEC_TIMEOUT_MS)
        return misuse(
          "container-exec",
          `--timeout must be a number of seconds from 0 to ${MAX_EXEC_TIMEOUT_MS / 1000}`,
          this.usage,
        );
      const wd = f["--workdir"];
      if (wd !== undefined && (typeof wd !== "string" || !wd.startsWith("/")))
        return misuse("container-exec", "--workdir must be an absolute path in the container", this.usage);
      const sup = await supervisorOf(ctx, "container-exec", container, this.usage);
      const timeoutMs = Math.round(seconds * 1000);
      const r = await call("container-exec", () =>
        sup.call<ExecResult>(
          {
            op: "exec",
            command,
            timeoutMs,
            ...(typeof wd === "string" ? { workingDir: wd } : {}),
            ...(f["--stdin"] ? { stdin: io.stdin ?? "" } : {}),
          },
          timeoutMs + 15_000,
        ),
      );
      let stderr = r.stderr;
      if (r.truncated) stderr += "container-exec: output was cut at 1 MiB per stream\n";
      if (r.timedOut)
        return {
          code: 124,
          stdout: r.stdout,
          stderr: stderr + `container-exec: ${command[0]} was killed after ${seconds} s (--timeout)\n`,
        };
      return { code: r.exitCode, stdout: r.stdout, stderr };
    },
  },
  "container-push": {
    usage: "container-push CONTAINER SRC DEST [--mode 0644]",
    summary: `copy a file from the unit (SRC, relative to the hook's directory) into a workload container at DEST (absolute; directories made), atomically; at most ${MAX_FILE_BYTES / 1024 / 1024} MiB`,
    flags: { "--mode": "value" },
    async run(ctx, f, pos, io) {
      if (pos.length !== 3)
        return misuse("container-push", "give the container, the source file and the destination path", this.usage);
      const [container, src, dest] = pos as [string, string, string];
      const m = mode("container-push", f["--mode"], this.usage) ?? 0o644;
      if (!dest.startsWith("/"))
        return misuse("container-push", `DEST must be an absolute path in the container (got ${dest})`, this.usage);
      let content: Buffer;
      try {
        content = await readFile(inCwd(io, src));
      } catch (err) {
        return refuse("container-push", `cannot read ${src}: ${(err as Error).message}`);
      }
      if (content.length > MAX_FILE_BYTES)
        return refuse(
          "container-push",
          `${src} is ${content.length} bytes; at most ${MAX_FILE_BYTES} bytes may be pushed`,
        );
      const sup = await supervisorOf(ctx, "container-push", container, this.usage);
      await call("container-push", () =>
        sup.call({ op: "push", path: dest, content: content.toString("base64"), mode: m, makeDirs: true }),
      );
      return ok();
    },
  },
  "container-pull": {
    usage: "container-pull CONTAINER SRC DEST",
    summary: `copy a file out of a workload container (SRC, absolute) to the unit (DEST, relative to the hook's directory), keeping its mode; at most ${MAX_FILE_BYTES / 1024 / 1024} MiB`,
    flags: {},
    async run(ctx, _f, pos, io) {
      if (pos.length !== 3)
        return misuse("container-pull", "give the container, the source path and the destination file", this.usage);
      const [container, src, dest] = pos as [string, string, string];
      if (!src.startsWith("/"))
        return misuse("container-pull", `SRC must be an absolute path in the container (got ${src})`, this.usage);
      const sup = await supervisorOf(ctx, "container-pull", container, this.usage);
      const r = await call("container-pull", () => sup.call<PullResult>({ op: "pull", path: src }));
      try {
        await writeFile(inCwd(io, dest), Buffer.from(r.content, "base64"), { mode: r.mode & 0o777 });
      } catch (err) {
        return refuse("container-pull", `cannot write ${dest}: ${(err as Error).message}`);
      }
      return ok();
    },
  },
};
