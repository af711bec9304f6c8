/**
 * {@link SshSession}: one SSH connection to a host, with the host key verified against a pinned
 * fingerprint (trust-on-first-use only when asked, and the fingerprint seen is reported so it can
 * be recorded and enforced afterwards). Commands are judged by exit code, never by stderr; a
 * non-root user runs privileged commands through `sudo -n` (never a prompt).
 *
 * Cancellable: a session connected with a signal closes its connection when the signal aborts, so a
 * dial, a command or an upload in flight ends at once (a command already started on the host may
 * still finish there: every step of an install is atomic and checks before it changes, so the next
 * run takes over from wherever this one stopped).
 */
import { createHash, randomBytes } from "node:crypto";
import { stat } from "node:fs/promises";
import { NodeSSH } from "node-ssh";
import { StewardError, sleep as pause } from "../../api/core";

export interface SshTarget {
  host: string;
  /** @default 22 */
  port?: number;
  user: string;
  /** The private key's content (PEM or OpenSSH), never a path on the controller. */
  privateKey: string;
  passphrase?: string;
  /** Pinned host key, `SHA256:<base64>` as `ssh-keygen -lf` prints it. */
  hostKey?: string;
  /** Accept whatever host key the host offers, this once; the caller records the fingerprint. */
  trustOnFirstUse?: boolean;
  /** Reach the host through this one (a bastion); same key, its own pinned host key. */
  jump?: { host: string; port?: number; user: string; hostKey: string };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

const DIAL_ERRORS = new Set(["ECONNREFUSED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ECONNRESET"]);

export function fingerprint(key: Buffer): string {
  return "SHA256:" + createHash("sha256").update(key).digest("base64").replace(/=+$/, "");
}

export class SshSession {
  private readonly unlisten: () => void;

  protected constructor(
    private readonly ssh: NodeSSH,
    readonly target: SshTarget,
    readonly hostKey: string,
    private readonly via?: SshSession,
    private readonly signal?: AbortSignal,
  ) {
    const onAbort = (): void => {
      drop(ssh);
      this.close();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    this.unlisten = () => signal?.removeEventListener("abort", onAbort);
  }

  get label(): string {
    return `${this.target.user}@${this.target.host}${this.target.port && this.target.port !== 22 ? `:${this.target.port}` : ""}`;
  }
  get asRoot(): boolean {
    return this.target.user === "root";
  }

  /**
   * Connects, retrying only dial failures (refused, timed out, unreachable) with backoff; a host
   * key mismatch or an authentication failure is final at once. With `signal`, an abort ends the
   * dial (a `cancelled` error) and, later, closes the session.
   */
  static async connect(target: SshTarget, opts: { attempts?: number; signal?: AbortSignal } = {}): Promise<SshSession> {
    if (!target.hostKey && !target.trustOnFirstUse) {
      throw new StewardError(
        "invalid-request",
        `no host key pinned for ${target.host}: give its fingerprint (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host) or ask for trust-on-first-use explicitly`,
      );
    }
    const attempts = opts.attempts ?? 5;
    const { signal } = opts;
    const cancelled = (): StewardError =>
      new StewardError("cancelled", `connecting to ${target.host} was cancelled`, { cause: signal?.reason });
    let lastErr: unknown;
    for (let i = 0; i < attempts; i++) {
      if (signal?.aborted) throw cancelled();
      let seen = "";
      const ssh = new NodeSSH();
      let via: SshSession | undefined;
      // An abort mid-dial drops the socket: the connect below then fails, and is told as cancelled.
      const onAbort = (): void => {
        drop(ssh);
        via?.close();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        // Through a jump host: verify it first, then tunnel the target's SSH over it.
        if (target.jump)
          via = await SshSession.connect(
            {
              ...target.jump,
              privateKey: target.privateKey,
              ...(target.passphrase ? { passphrase: target.passphrase } : {}),
            },
            { attempts: 1, ...(signal ? { signal } : {}) },
          );
        const sock = via ? await via.tunnel(target.host, target.port ?? 22) : undefined;
        await ssh.connect({
          ...(sock ? { sock } : {}),
          host: target.host,
          port: target.port ?? 22,
          username: target.user,
          privateKey: target.privateKey,
          ...(target.passphrase ? { passphrase: target.passphrase } : {}),
          // A cut link is noticed within ~20 s (5 s keepalives, 3 missed).
          readyTimeout: 10_000,
          keepaliveInterval: 5_000,
          keepaliveCountMax: 3,
          hostVerifier: (key: Buffer) => {
            seen = fingerprint(key);
            return target.hostKey ? seen === target.hostKey : target.trustOnFirstUse === true;
          },
        });
        // node-ssh drops its error listener once connected: a reset from the host (it rebooted, or
        // answered our close with RST) would then be an uncaught exception that ends the process.
        // The next command on a dead connection fails on its own.
        ssh.connection?.on("error", () => undefined);
        signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) {
          onAbort();
          throw cancelled();
        }
        return new SshSession(ssh, target, seen, via, signal);
      } catch (err) {
        signal?.removeEventListener("abort", onAbort);
        ssh.dispose();
        via?.close();
        if (signal?.aborted) throw cancelled();
        if (StewardError.isInstance(err)) throw err; // from the jump host: already explained
        const e = err as { code?: string; level?: string; message?: string };
        if (seen && target.hostKey && seen !== target.hostKey) {
          throw new StewardError(
            "forbidden",
            `host key of ${target.host} does not match: expected ${target.hostKey}, the host offered ${seen}. If the host was reinstalled, verify the new key and pin it; otherwise someone may be intercepting the connection`,
            { details: { expected: target.hostKey, offered: seen } },
          );
        }
        if (e.level === "client-authentication") {
          throw new StewardError(
            "unauthorized",
            `${target.user}@${target.host} refused the private key (authentication failed): check the user name and that the public key is in ~${target.user}/.ssh/authorized_keys`,
          );
        }
        if (/passphrase|encrypted|Cannot parse privateKey/i.test(e.message ?? "")) {
          throw new StewardError(
            "invalid-request",
            `the private key for ${target.host} cannot be read: ${e.message} (is it encrypted without a passphrase given, or not a private key?)`,
          );
        }
        lastErr = err;
        const retryable =
          (e.code && DIAL_ERRORS.has(e.code)) || e.level === "client-timeout" || /Timed out/i.test(e.message ?? "");
        if (!retryable) break;
        await pause(Math.min(8000, 500 * 2 ** i), signal);
      }
    }
    throw new StewardError(
      "unavailable",
      `cannot reach ${target.host}:${target.port ?? 22}: ${(lastErr as Error)?.message ?? "unknown error"}`,
      { cause: lastErr, reason: "host-unreachable" },
    );
  }

  /**
   * Runs a shell command; with `sudo`, through `sudo -n` unless the user is root. Once the session's
   * signal has aborted, throws `cancelled` (before starting, or instead of what the closed connection answered).
   */
  async run(cmd: string, opts: { sudo?: boolean; stdin?: string } = {}): Promise<RunResult> {
    this.checkCancelled();
    const wrapped = opts.sudo && !this.asRoot ? `sudo -n sh -c ${shellQuote(cmd)}` : cmd;
    try {
      const r = await this.ssh.execCommand(wrapped, opts.stdin !== undefined ? { stdin: opts.stdin } : {});
      this.checkCancelled();
      return { code: r.code ?? (r.signal ? 128 : 0), stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      this.checkCancelled();
      throw err;
    }
  }

  private checkCancelled(): void {
    if (this.signal?.aborted)
      throw new StewardError("cancelled", `the work on ${this.target.host} was cancelled`, {
        cause: this.signal.reason,
      });
  }

  /** Runs a command that must succeed; the error names the host, the step and what the host said. */
  async must(step: string, cmd: string, opts: { sudo?: boolean; stdin?: string } = {}): Promise<string> {
    const r = await this.run(cmd, opts);
    if (r.code !== 0)
      throw new StewardError(
        "unavailable",
        `${step} failed on ${this.target.host} (exit ${r.code}): ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" | ")}`,
        { reason: "remote-command-failed" },
      );
    return r.stdout;
  }

  /**
   * Puts `content` at `remotePath` with `mode`, atomically: upload to a temporary file, check its
   * SHA-256 on the host, then move it into place. Returns the bytes sent.
   */
  async putFile(localPath: string, remotePath: string, mode: string, sha256: string): Promise<number> {
    const tmp = `/tmp/steward-upload-${randomBytes(6).toString("hex")}`;
    this.checkCancelled();
    await this.ssh.putFile(localPath, tmp).catch((err: unknown) => {
      this.checkCancelled();
      throw err;
    });
    try {
      const sum = (await this.must("checking the upload", `sha256sum ${shellQuote(tmp)}`)).split(" ")[0];
      if (sum !== sha256)
        throw new StewardError(
          "unavailable",
          `upload to ${this.target.host} arrived corrupted (sha256 ${sum}, expected ${sha256})`,
          { reason: "upload-corrupted" },
        );
      await this.must(
        "installing a file",
        `mkdir -p ${shellQuote(remotePath.slice(0, remotePath.lastIndexOf("/")))} && install -m ${mode} ${shellQuote(tmp)} ${shellQuote(remotePath)}.new && mv -f ${shellQuote(remotePath)}.new ${shellQuote(remotePath)}`,
        { sudo: true },
      );
    } finally {
      await this.run(`rm -f ${shellQuote(tmp)}`);
    }
    return (await stat(localPath)).size;
  }

  /** Writes a small file from memory (config, scripts), atomically, with `mode`. */
  async writeFile(remotePath: string, content: string, mode: string): Promise<void> {
    const dir = remotePath.slice(0, remotePath.lastIndexOf("/"));
    await this.must(
      "writing a file",
      `mkdir -p ${shellQuote(dir)} && umask 077 && cat > ${shellQuote(remotePath)}.new && chmod ${mode} ${shellQuote(remotePath)}.new && mv -f ${shellQuote(remotePath)}.new ${shellQuote(remotePath)}`,
      { sudo: true, stdin: content },
    );
  }

  /** A TCP stream to `host:port` opened from this host (for jumping through it). */
  tunnel(host: string, port: number): Promise<NodeJS.ReadableStream & NodeJS.WritableStream> {
    return this.ssh.forwardOut("127.0.0.1", 0, host, port).catch((err: Error) => {
      throw new StewardError(
        "unavailable",
        `jump host ${this.target.host} cannot reach ${host}:${port}: ${err.message}`,
        { cause: err, reason: "host-unreachable" },
      );
    }) as Promise<NodeJS.ReadableStream & NodeJS.WritableStream>;
  }

  close(): void {
    this.unlisten();
    this.ssh.dispose();
    this.via?.close();
  }
}

/**
 * Drops the connection at once: `dispose()` alone ends it politely, which waits for the host (for ever
 * on a cut link) and, while dialing, for the dial's own timeout.
 */
function drop(ssh: NodeSSH): void {
  ssh.connection?.destroy();
  ssh.dispose();
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
