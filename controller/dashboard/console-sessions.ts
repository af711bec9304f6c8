/**
 * The dashboard's console pane (`/v1/console`, see api/dashboard.ts): the console shell of the CLI,
 * run on this host for the logged-in user. Each session is one `steward` console process, started
 * as its own process group with a fresh STEWARD_HOME (0700, removed afterwards) whose only
 * controller is this one, reached with the user's own session token: every command it runs is
 * checked by the API against that user's permissions, as from any client. The console runs
 * restricted (cli/console/restricted.ts): it runs on the controller's host as the controller's OS
 * user, so nothing that reads local files or starts anything here is allowed.
 *
 * `/v1/console?model=NAME` starts it in that model (the page's), as `steward switch` would have;
 * the API still checks the user's access to it at each command.
 *
 * Keys go to the console's stdin, its stdout and stderr come back as `output`, resizes go to its
 * fd 3. A session ends, killing the whole process group, when the socket closes, the console exits,
 * its token expires or is revoked, or no key came for the idle time. Nothing a browser sends can end
 * the controller: every frame is checked, and every handler runs inside error handling.
 */
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import { constants } from "node:os";
import { join } from "node:path";
import type { Duplex, Writable } from "node:stream";
import { WebSocketServer } from "ws";
import type WebSocket from "ws";
import type { ConsoleMessage, Logger, WireError } from "../../api";
import {
  CONSOLE_CLOSE_CODES,
  MAX_CONSOLE_FRAME_BYTES,
  Name,
  StewardError,
  WEB_CONSOLE_CONTROL_FD,
  WEB_CONSOLE_ENV,
} from "../../api";
import type { StateCache } from "../state";
import type { Principal } from "../access/auth";
import { atTokenExpiry, authenticate, requireUser } from "../access/auth";
import { acceptAuthenticatedSocket } from "../server/accept-socket";
import { answerHandshakeErrors } from "../server/raw-answer";
import { readSessionCookie } from "../access/session-cookie";

type User = Extract<Principal, { kind: "user" }>;

/** The console process's V8 heap limit; it needs ~50 MB, keys pasted faster than shown included. */
const CONSOLE_HEAP_MB = 128;

export interface ConsoleSessionOptions {
  cache: StateCache;
  log: Logger;
  /** This controller's name, as the console's client config names it (its prompt shows it). */
  controllerName: string;
  caCert: string;
  controllerAddresses: () => string[];
  /** Where the sessions' STEWARD_HOMEs are made; emptied at start (what a crash left). */
  homesDir: string;
  /** The CLI's entry script, found by {@link findCli} unless given. */
  cliMain?: string;
  /** Consoles one user may have open on this replica. @default 2 */
  maxPerUser?: number;
  /** Consoles this replica runs at once. @default 8 */
  maxSessions?: number;
  /** A console with no input this long is ended. @default 30 minutes */
  idleMs?: number;
  /** Output waiting for a slow browser beyond which the console's output is paused. @default 1 MiB */
  maxBufferedBytes?: number;
}

/** The console's CLI on this host: the build's (a checkout) or the bundle shipped beside the controller's (an installed host). */
export function findCli(candidates: string[]): string | undefined {
  return candidates.find((c) => existsSync(c));
}

class Session {
  child?: ChildProcess;
  control?: Writable;
  home?: string;
  ended = false;
  exited = false;
  paused = false;
  idle?: NodeJS.Timeout;
  stopExpiry?: () => void;

  constructor(
    readonly ws: WebSocket,
    public principal: User,
    readonly headers: IncomingMessage["headers"],
  ) {}

  send(msg: ConsoleMessage, done?: () => void): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(msg), done);
  }
}

export class ConsoleSessionHub {
  private readonly wss: WebSocketServer;
  private readonly sessions = new Set<Session>();
  private authVersion: number;
  private readonly unsubscribe: () => void;
  private readonly o: Required<Omit<ConsoleSessionOptions, "cliMain">> & { cliMain?: string };

  constructor(opts: ConsoleSessionOptions) {
    this.o = { maxPerUser: 2, maxSessions: 8, idleMs: 30 * 60_000, maxBufferedBytes: 1024 * 1024, ...opts };
    this.wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CONSOLE_FRAME_BYTES });
    answerHandshakeErrors(this.wss);
    // Homes a crashed controller left behind hold tokens: they go now.
    rmSync(this.o.homesDir, { recursive: true, force: true });
    this.authVersion = this.o.cache.authVersion;
    this.unsubscribe = this.o.cache.subscribe(() => {
      if (this.o.cache.authVersion === this.authVersion) return;
      this.authVersion = this.o.cache.authVersion;
      for (const s of [...this.sessions]) this.recheck(s);
    });
  }

  /** Consoles running now (for tests and status). */
  get size(): number {
    return this.sessions.size;
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    acceptAuthenticatedSocket(
      this.wss,
      this.o.cache,
      { req, socket, head },
      (authenticated) => {
        const principal = requireUser(authenticated);
        const token = presentedToken(req.headers)!;
        if (!this.o.cliMain)
          throw new StewardError(
            "unavailable",
            "the console is not installed on this controller host (no cli-bundle/main.js beside the controller's bundle): reinstall the controller from a newer build",
            { reason: "console-not-installed" },
          );
        const mine = [...this.sessions].filter((s) => s.principal.user === principal.user).length;
        if (mine >= this.o.maxPerUser)
          throw new StewardError(
            "rate-limited",
            `user ${principal.user} already has ${mine} consoles open on this controller, the most allowed: close one first`,
          );
        if (this.sessions.size >= this.o.maxSessions)
          throw new StewardError(
            "unavailable",
            `this controller already runs ${this.sessions.size} consoles, its limit: try again later`,
            { reason: "at-capacity" },
          );
        return { principal, token };
      },
      (ws, { principal, token }) => {
        const s = new Session(ws, principal, { authorization: req.headers.authorization, cookie: req.headers.cookie });
        this.sessions.add(s);
        ws.on("close", () => this.end(s));
        // Keys wait in the socket until the console is there to take them.
        ws.pause();
        ws.on("message", (data, isBinary) => {
          try {
            this.request(s, data, isBinary);
          } catch (err) {
            this.o.log.error("unexpected error serving a console frame", { err: (err as Error).message });
            this.end(s, CONSOLE_CLOSE_CODES.internal, "internal error; see the controller log");
          }
        });
        s.stopExpiry = atTokenExpiry(
          principal.token.expiresAt,
          () => this.recheck(s),
          () => !s.ended,
        );
        this.touch(s);
        this.start(s, token, startingModel(req.url)).catch((err: unknown) => {
          if (s.ended) return;
          this.o.log.error("could not start a console", { user: principal.user, err: (err as Error).message });
          s.send({ error: { code: "internal", message: `the console could not start: ${(err as Error).message}` } });
          this.end(s, CONSOLE_CLOSE_CODES.internal, "the console could not start");
        });
      },
    );
  }

  /** Makes the session's home and starts the console in it. */
  private async start(s: Session, token: string, model: string | undefined): Promise<void> {
    let home: string | undefined;
    try {
      await mkdir(this.o.homesDir, { recursive: true, mode: 0o700 });
      home = await mkdtemp(join(this.o.homesDir, "console-"));
      await chmod(home, 0o700);
      // The user's own session token, never a password: the console can do what the user can, until the session ends.
      const config = {
        current: this.o.controllerName,
        controllers: {
          [this.o.controllerName]: {
            addresses: this.o.controllerAddresses(),
            caCert: this.o.caCert,
            user: s.principal.user,
            token,
            ...(model ? { currentModel: model } : {}),
          },
        },
      };
      await writeFile(join(home, "controllers.json"), JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
    } catch (err) {
      if (home) await rm(home, { recursive: true, force: true });
      throw err;
    }
    // The socket closed meanwhile: nothing to start.
    if (s.ended) {
      await rm(home, { recursive: true, force: true });
      return;
    }
    s.home = home;
    // A bounded heap: whatever a browser sends, a console costs this host a known amount of memory.
    const child = (s.child = spawn(process.execPath, [`--max-old-space-size=${CONSOLE_HEAP_MB}`, this.o.cliMain!], {
      cwd: home,
      // A process group of its own (one kill ends the console and whatever it runs), and none of the
      // controller's environment: only what a terminal session needs.
      detached: true,
      stdio: ["pipe", "pipe", "pipe", "pipe"],
      env: {
        PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        HOME: home,
        STEWARD_HOME: home,
        TERM: "xterm-256color",
        LANG: process.env.LANG ?? "C.UTF-8",
        ...(process.env.TZ ? { TZ: process.env.TZ } : {}),
        [WEB_CONSOLE_ENV.terminal]: "web",
        [WEB_CONSOLE_ENV.restricted]: "1",
      },
    }));
    s.control = child.stdio[WEB_CONSOLE_CONTROL_FD] as Writable;
    for (const stream of [child.stdin, s.control]) stream?.on("error", () => undefined);
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding("utf8");
      stream?.on("data", (text: string) => this.output(s, text));
    }
    child.once("error", (err) => {
      s.exited = true;
      s.send({ error: { code: "internal", message: `the console could not start: ${err.message}` } });
      this.end(s, CONSOLE_CLOSE_CODES.internal, "the console could not start");
    });
    child.once("exit", () => {
      s.exited = true;
      // Whatever it started and left behind goes with it.
      killGroup(child);
    });
    child.once("close", (code, signal) => {
      s.send({ exit: code ?? 128 + (signal ? constants.signals[signal] : 0) });
      this.end(s, CONSOLE_CLOSE_CODES.exited, "the console exited");
    });
    s.ws.resume();
  }

  /** The console's output, as a terminal shows it (a pty turns \n into \r\n; xterm.js does not). */
  private output(s: Session, text: string): void {
    s.send({ output: text.replace(/(?<!\r)\n/g, "\r\n") }, () => this.drained(s));
    if (!s.paused && s.ws.bufferedAmount > this.o.maxBufferedBytes) {
      s.paused = true;
      s.child?.stdout?.pause();
      s.child?.stderr?.pause();
    }
  }

  private drained(s: Session): void {
    if (!s.paused || s.ws.bufferedAmount > this.o.maxBufferedBytes) return;
    s.paused = false;
    s.child?.stdout?.resume();
    s.child?.stderr?.resume();
  }

  private request(s: Session, data: WebSocket.RawData, isBinary: boolean): void {
    if (s.ended) return;
    if (isBinary) {
      this.refuse(s, CONSOLE_CLOSE_CODES.binary, "binary frames are not accepted: send JSON text frames");
      return;
    }
    const msg = parseRequest(data.toString());
    if (!msg) {
      this.refuse(
        s,
        CONSOLE_CLOSE_CODES.malformed,
        `send {"input": "<keys>"} or {"resize": {"cols": <1-1000>, "rows": <1-1000>}} as JSON text, at most ${MAX_CONSOLE_FRAME_BYTES} bytes a frame`,
      );
      return;
    }
    if ("input" in msg) {
      this.touch(s);
      const stdin = s.child?.stdin;
      if (!stdin?.writable) return;
      // A console that does not read its keys holds the browser back, rather than our memory filling.
      if (!stdin.write(msg.input)) {
        s.ws.pause();
        stdin.once("drain", () => s.ws.resume());
      }
    } else {
      s.control?.write(JSON.stringify(msg) + "\n");
    }
  }

  private refuse(s: Session, code: number, message: string): void {
    const error: WireError = { code: "invalid-request", message };
    s.send({ error });
    this.end(s, code, "malformed frame");
  }

  /** Input resets the idle timer. */
  private touch(s: Session): void {
    clearTimeout(s.idle);
    s.idle = setTimeout(() => {
      s.send({
        error: {
          code: "unavailable",
          message: `the console was closed after ${Math.round(this.o.idleMs / 60_000)} minutes without input`,
        },
      });
      this.end(s, CONSOLE_CLOSE_CODES.idle, "idle");
    }, this.o.idleMs);
    s.idle.unref();
  }

  /** Ends the console if its session no longer holds (expired, logged out, password changed, user removed). */
  private recheck(s: Session): void {
    try {
      s.principal = requireUser(authenticate(this.o.cache, s.headers));
    } catch (err) {
      const message = StewardError.isInstance(err) ? err.message : "session ended";
      s.send({ error: { code: "unauthorized", message } });
      this.end(s, CONSOLE_CLOSE_CODES.tokenEnded, Buffer.from(message).subarray(0, 123).toString());
    }
  }

  /** Ends a session: the console's whole process group is killed and its home removed. */
  private end(s: Session, code: number = CONSOLE_CLOSE_CODES.exited, reason = ""): void {
    if (!s.ended) {
      s.ended = true;
      clearTimeout(s.idle);
      s.stopExpiry?.();
      this.sessions.delete(s);
      if (s.child && !s.exited) killGroup(s.child);
      s.child?.stdin?.destroy();
      s.control?.destroy();
      if (s.ws.readyState === s.ws.OPEN || s.ws.readyState === s.ws.CONNECTING) s.ws.close(code, reason);
    }
    this.removeHome(s);
  }

  private removeHome(s: Session): void {
    const home = s.home;
    if (!home) return;
    s.home = undefined;
    const remove = (): void => {
      rm(home, { recursive: true, force: true, maxRetries: 3 }).catch((err: unknown) =>
        this.o.log.warn("could not remove a console's home", { home, err: (err as Error).message }),
      );
    };
    // Once the console is dead, so nothing writes there any more.
    if (!s.child || s.exited) remove();
    else s.child.once("exit", remove);
  }

  close(): void {
    this.unsubscribe();
    for (const s of [...this.sessions]) {
      this.end(s, CONSOLE_CLOSE_CODES.shutdown, "the controller is stopping");
    }
    this.wss.close();
    rmSync(this.o.homesDir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The token the request was authenticated with: the Bearer token or the dashboard's session cookie. */
function presentedToken(headers: IncomingMessage["headers"]): string | undefined {
  const auth = headers.authorization;
  if (auth?.startsWith("Bearer ")) return auth.slice("Bearer ".length);
  return readSessionCookie(headers);
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    /* already gone */
  }
}

/** A frame from the page, or undefined when it is not exactly one of ConsoleRequest. */
function parseRequest(text: string): { input: string } | { resize: { cols: number; rows: number } } | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1) return undefined;
  const o = v as Record<string, unknown>;
  if (keys[0] === "input") return typeof o.input === "string" ? { input: o.input } : undefined;
  if (keys[0] !== "resize") return undefined;
  const r = o.resize as Record<string, unknown> | null;
  if (typeof r !== "object" || r === null || Object.keys(r).length !== 2) return undefined;
  const size = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 1000;
  return size(r.cols) && size(r.rows) ? { resize: { cols: r.cols, rows: r.rows } } : undefined;
}

/** The model a console starts in (`?model=`), when it is a model name at all; anything else is ignored. */
function startingModel(url: string | undefined): string | undefined {
  const model = new URL(url ?? "/", "http://console").searchParams.get("model") ?? undefined;
  return model !== undefined && Name.safeParse(model).success ? model : undefined;
}
