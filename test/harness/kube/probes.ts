/**
 * Container probes as the kubelet runs them (kubernetes.io/docs/concepts/configuration/liveness-
 * readiness-startup-probes, and the Probe type in the API reference): `exec` runs a command in the
 * container (success: exit 0), `httpGet` asks the pod's IP (success: a status from 200 to 399),
 * `tcpSocket` opens a connection. Each attempt has `timeoutSeconds` (default 1); an attempt every
 * `periodSeconds` (default 10) after `initialDelaySeconds` (default 0); the result flips after
 * `successThreshold` (default 1) successes or `failureThreshold` (default 3) failures in a row.
 */
import { execFile } from "node:child_process";
import { request } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";

export interface ProbeSpec {
  exec?: { command?: string[] };
  httpGet?: { path?: string; port: number | string; host?: string; scheme?: string };
  tcpSocket?: { port: number | string; host?: string };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
}

export interface ProbeTarget {
  podIP: string;
  /** The container's PID 1, on this machine: exec probes enter its namespaces. */
  pid: number;
  /** Named ports of the container (`ports[].name` → containerPort). */
  ports: Record<string, number>;
}

/** One attempt. */
export async function probeOnce(p: ProbeSpec, t: ProbeTarget): Promise<boolean> {
  const timeoutMs = (p.timeoutSeconds ?? 1) * 1000;
  const port = (v: number | string): number => (typeof v === "number" ? v : (t.ports[v] ?? Number(v)));
  if (p.exec) {
    const cmd = p.exec.command ?? [];
    if (cmd.length === 0) return false;
    return new Promise((resolve) => {
      execFile("nsenter", ["-t", String(t.pid), "-n", "-m", "-u", "-p", "--", ...cmd], { timeout: timeoutMs }, (err) =>
        resolve(!err),
      );
    });
  }
  if (p.httpGet) {
    const g = p.httpGet;
    // HTTPS: the kubelet does not verify the certificate (the Probe type's `scheme` in the API reference).
    const https = (g.scheme ?? "HTTP") === "HTTPS";
    return new Promise((resolve) => {
      const send = https ? httpsRequest : request;
      const req = send(
        {
          host: g.host ?? t.podIP,
          port: port(g.port),
          path: g.path ?? "/",
          timeout: timeoutMs,
          headers: { "user-agent": "kube-probe/fake" },
          ...(https ? { rejectUnauthorized: false } : {}),
        },
        (res) => {
          res.resume();
          resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 400);
        },
      );
      req.on("timeout", () => {
        req.destroy();
        resolve(false);
      });
      req.on("error", () => resolve(false));
      req.end();
    });
  }
  if (p.tcpSocket) {
    const s = p.tcpSocket;
    return new Promise((resolve) => {
      const sock = connect({ host: s.host ?? t.podIP, port: port(s.port), timeout: timeoutMs });
      sock.once("connect", () => {
        sock.destroy();
        resolve(true);
      });
      sock.once("timeout", () => {
        sock.destroy();
        resolve(false);
      });
      sock.once("error", () => resolve(false));
    });
  }
  return false;
}

/**
 * Runs a probe on its schedule and reports each change of its result (`true` once `successThreshold`
 * attempts in a row passed, `false` once `failureThreshold` failed). Stop with the returned function.
 */
export function scheduleProbe(
  p: ProbeSpec,
  target: () => ProbeTarget | undefined,
  onResult: (ok: boolean) => void,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let result: boolean | undefined;
  let successes = 0,
    failures = 0;
  const attempt = async (): Promise<void> => {
    const t = target();
    const ok = t ? await probeOnce(p, t) : false;
    if (stopped) return;
    if (ok) {
      successes++;
      failures = 0;
    } else {
      failures++;
      successes = 0;
    }
    if (ok && result !== true && successes >= (p.successThreshold ?? 1)) {
      result = true;
      onResult(true);
    }
    if (!ok && result !== false && failures >= (p.failureThreshold ?? 3)) {
      result = false;
      onResult(false);
    }
    timer = setTimeout(() => void attempt(), (p.periodSeconds ?? 10) * 1000);
  };
  timer = setTimeout(() => void attempt(), (p.initialDelaySeconds ?? 0) * 1000);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
