/**
 * The dashboard's console pane (`/v1/console`) against a real controller, over a real WebSocket as
 * the page's xterm.js would use it: the console runs as the logged-in user (their token, their
 * permissions), restricted to commands that talk to the controller; Ctrl-C cancels a running
 * command; the session ends (and leaves no process and no home behind) when the socket closes, the
 * token is revoked or expires, or nobody types; limits per user and per replica hold; and no frame
 * a browser can send upsets the controller.
 */
import test from "ava";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import type { Writable } from "node:stream";
import { join } from "node:path";
import type WebSocket from "ws";
import { CONSOLE_CLOSE_CODES, CSRF_HEADER, MAX_CONSOLE_FRAME_BYTES } from "../api";
import { COMMAND_NAMES, WEB_CONSOLE_COMMANDS, restrictedRefusal } from "../cli";
import type { TestController } from "./harness/controller";
import { allReady, operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";
import { processesUnder } from "./harness/processes";
import type { ConsoleRefusal, WebConsole } from "./harness/web-console";
import { loginToken, openConsole as open } from "./harness/web-console";

const WAIT_MS = 45_000;
const dist = join(__dirname, "..");
let tc: TestController;
let consolesDir: string;

test.before(async () => {
  // Three consoles per replica here, so that the replica's limit is reached with few processes.
  tc = await startTestController({ consoles: { maxSessions: 3 } });
  consolesDir = join(tc.dir, "c", "consoles");
  await tc.admin.createModel("con");
  await tc.admin.deploy("con", { name: "board", operator: await tc.upload(join(operatorsDir, "motd")), units: 1 });
  await tc.waitForUnits("con", allReady(1), "board active", 60_000);
  await tc.admin.createUser("reader", "reader-password-1");
  await tc.admin.grant("con", "reader", "read");
  await tc.admin.createUser("carol", "carol-password-1");
});
test.after.always(async () => {
  await tc?.close();
});

/** Every console a test opened; a failed test's are closed before the next starts, so each starts clean. */
const opened = new Set<WebSocket>();
test.afterEach.always(async () => {
  for (const ws of opened) ws.terminate();
  opened.clear();
  if (consolesDir) await noConsoleProcesses();
});

const login = (user: string, password: string, c = tc): Promise<string> =>
  loginToken(c.addresses[0]!, c.caCert, user, password);

/** Opens a console on `c` (the shared controller by default), closed after the test whatever happens. */
function openConsole(headers: Record<string, string>, c = tc, origin?: string): Promise<WebConsole> {
  return open(c.addresses[0]!, c.caCert, headers, {
    ...(origin ? { origin } : {}),
    waitMs: WAIT_MS,
    onSocket: (ws) => opened.add(ws),
  });
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

async function noConsoleProcesses(): Promise<void> {
  await eventually("no console process left", async () => (await processesUnder(consolesDir)).length === 0, WAIT_MS);
}

test.serial(
  "status, use then a command, and refusals that say why; the home holds only the user's token and goes afterwards",
  async (t) => {
    const token = await login("admin", tc.adminPassword);
    const c = await openConsole(bearer(token));
    // Typed before the console is even there: the keys wait for it.
    c.type("use con\r");
    await c.waitFor(/using model con in this console\nsteward test:con> $/);

    const homes = await readdir(consolesDir);
    t.is(homes.length, 1);
    const home = join(consolesDir, homes[0]!);
    t.is((await stat(home)).mode & 0o777, 0o700);
    t.is((await stat(join(home, "controllers.json"))).mode & 0o777, 0o600);
    const cfg = JSON.parse(await readFile(join(home, "controllers.json"), "utf8")) as {
      current: string;
      controllers: Record<string, Record<string, unknown>>;
    };
    t.is(cfg.current, "test");
    t.like(cfg.controllers.test, { user: "admin", token, addresses: tc.addresses, caCert: tc.caCert });
    t.false("password" in cfg.controllers.test!, "never a password");

    let m = c.mark();
    c.type("status\r");
    await c.waitFor(/^board\/0\*?\s+active\s+idle/m, m);
    await c.waitFor(/steward test:con> $/, m);

    m = c.mark();
    c.type("deploy ./operators/motd\r");
    await c.waitFor(
      /ERROR deploy needs the steward CLI on your own machine: it reads the operator from a local directory\nsteward test:con> $/,
      m,
    );
    m = c.mark();
    c.type("config board --file=/etc/passwd\r");
    await c.waitFor(/ERROR config --file needs the steward CLI on your own machine: it reads a local file\n/, m);
    m = c.mark();
    c.type("add-machine ssh:root@10.0.0.9 --trust-on-first-use\r");
    await c.waitFor(/ERROR add-machine ssh:root@10\.0\.0\.9: ssh: hosts need a private key/, m);
    m = c.mark();
    c.type("bootstrap\r");
    await c.waitFor(
      /ERROR bootstrap needs the steward CLI on your own machine: it reads local files and starts processes\nsteward test:con> $/,
      m,
    );

    // A new size reaches the console's line editor, which redraws the prompt for it (nothing typed).
    m = c.mark();
    c.ws.send(JSON.stringify({ resize: { cols: 120, rows: 40 } }));
    await c.waitFor(/^steward test:con> $/, m);
    m = c.mark();
    c.type("show-unit board/0 --format json\r");
    await c.waitFor(/"name": "board\/0"/, m);
    await c.waitFor(/steward test:con> $/, m);

    c.type("exit\r");
    const closed = await c.closed;
    t.is(closed.code, CONSOLE_CLOSE_CODES.exited);
    t.deepEqual(c.messages.at(-1), { exit: 1 }, "the refused lines count as failures, as in any console");
    await eventually("the console's home removed", async () => (await readdir(consolesDir)).length === 0, WAIT_MS);
    await noConsoleProcesses();
  },
);

test.serial(
  "Ctrl-C cancels a running debug-log and the prompt comes back; at the prompt it drops the line",
  async (t) => {
    const c = await openConsole(bearer(await login("admin", tc.adminPassword)));
    await c.waitFor(/steward test> $/);
    let m = c.mark();
    c.type("debug-log -m con --replay\r");
    await c.waitFor(/board\/0 .*INFO/, m);
    await eventually(
      "the console and debug-log running",
      async () => (await processesUnder(consolesDir)).length === 2,
      WAIT_MS,
    );
    // Typed while it runs: dropped by the Ctrl-C that follows, as a terminal's interrupt flushes its input.
    c.type("version");
    const cancelled = c.mark();
    c.type("\u0003");
    await c.waitFor(/steward test> $/, cancelled);
    await eventually(
      "debug-log gone, the console still there",
      async () => (await processesUnder(consolesDir)).length === 1,
      WAIT_MS,
    );

    m = c.mark();
    c.type("stat\u0003");
    await c.waitFor(/stat\^C\n[\s\S]*steward test> $/, m);
    m = c.mark();
    c.type("status -m con\r");
    await c.waitFor(/^board\/0\*?\s+active\s+idle/m, m);
    t.notRegex(c.screen().slice(cancelled), /version/, "the keys typed before the Ctrl-C did not come back");
    c.ws.close();
    t.is((await c.closed).code, 1005);
    await noConsoleProcesses();
  },
);

test.serial(
  "a user with read access sees the model but cannot change its config: the API refuses and the console says so",
  async (t) => {
    const c = await openConsole(bearer(await login("reader", "reader-password-1")));
    await c.waitFor(/steward test> $/);
    let m = c.mark();
    c.type("status -m con\r");
    await c.waitFor(/^board\/0\*?\s+active\s+idle/m, m);
    m = c.mark();
    c.type("config board -m con message=hacked\r");
    await c.waitFor(/ERROR user reader has read access to model con; this needs write/, m);
    await c.waitFor(/steward test> $/, m);
    t.not((await tc.admin.getApplication("con", "board")).config.message, "hacked");
    c.ws.close();
    await noConsoleProcesses();
  },
);

test.serial(
  "logging out ends the console, whether the dashboard's session (cookie) or a Bearer token; so does a password change",
  async (t) => {
    const address = tc.addresses[0]!;
    const session = await rawRequest(
      address,
      tc.caCert,
      "POST",
      "/v1/session",
      JSON.stringify({ user: "admin", password: tc.adminPassword }),
    );
    t.is(session.status, 200);
    const cookie = String(session.headers["set-cookie"]).split(";")[0]!;
    // A cookie alone is not enough: the upgrade must come from the controller's own page.
    const foreign = await openConsole({ cookie }).then(
      () => undefined,
      (err: ConsoleRefusal) => err,
    );
    t.is(foreign?.status, 403);

    const c = await openConsole({ cookie }, tc, `https://${address}`);
    await c.waitFor(/steward test> $/);
    const m = c.mark();
    c.type("debug-log -m con --replay\r");
    await c.waitFor(/board\/0 .*INFO/, m);
    const out = await rawRequest(address, tc.caCert, "DELETE", "/v1/session", undefined, {
      cookie,
      [CSRF_HEADER]: session.body.csrf as string,
      origin: `https://${address}`,
    });
    t.is(out.status, 204);
    const closed = await c.closed;
    t.is(closed.code, CONSOLE_CLOSE_CODES.tokenEnded);
    t.regex(closed.reason, /logged out/);
    t.like(c.messages.at(-1), { error: { code: "unauthorized" } });
    await noConsoleProcesses();

    const token = await login("admin", tc.adminPassword);
    const b = await openConsole(bearer(token));
    await b.waitFor(/steward test> $/);
    t.is((await rawRequest(address, tc.caCert, "POST", "/v1/logout", undefined, bearer(token))).status, 204);
    t.is((await b.closed).code, CONSOLE_CLOSE_CODES.tokenEnded);
    await noConsoleProcesses();

    // A password change ends every token the user held, and so their consoles.
    const carol = await openConsole(bearer(await login("carol", "carol-password-1")));
    await carol.waitFor(/steward test> $/);
    await tc.admin.changePassword("carol", "carol-password-2");
    t.is((await carol.closed).code, CONSOLE_CLOSE_CODES.tokenEnded);
    await noConsoleProcesses();
  },
);

test.serial("closing the socket ends the console and the command it runs, and removes its home", async (t) => {
  const c = await openConsole(bearer(await login("admin", tc.adminPassword)));
  await c.waitFor(/steward test> $/);
  c.type("debug-log -m con --replay\r");
  await c.waitFor(/board\/0 .*INFO/);
  const pids = await eventually(
    "the console and debug-log running",
    async () => {
      const p = await processesUnder(consolesDir);
      return p.length === 2 ? p : undefined;
    },
    WAIT_MS,
  );
  c.ws.terminate();
  await noConsoleProcesses();
  // Dead: gone from /proc, or a zombie until whoever inherited it reaps it.
  const alive = async (pid: number): Promise<boolean> =>
    !/^\d+ \(.*\) Z /.test(await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "0 (gone) Z "));
  for (const pid of pids) t.false(await alive(pid), `process ${pid} is gone`);
  await eventually("the console's home removed", async () => (await readdir(consolesDir)).length === 0, WAIT_MS);
});

test.serial(
  "limits: a third console of one user is refused (429), and beyond the replica's limit any (503)",
  async (t) => {
    const admin = await login("admin", tc.adminPassword);
    const a1 = await openConsole(bearer(admin));
    const a2 = await openConsole(bearer(admin));
    const third = await openConsole(bearer(admin)).then(
      () => undefined,
      (err: ConsoleRefusal) => err,
    );
    t.is(third?.status, 429);
    t.regex(
      third?.body?.message ?? "",
      /user admin already has 2 consoles open on this controller, the most allowed: close one first/,
    );
    const r1 = await openConsole(bearer(await login("reader", "reader-password-1")));
    const over = await openConsole(bearer(await login("carol", "carol-password-2"))).then(
      () => undefined,
      (err: ConsoleRefusal) => err,
    );
    t.is(over?.status, 503);
    t.regex(over?.body?.message ?? "", /already runs 3 consoles, its limit/);
    for (const c of [a1, a2, r1]) await c.waitFor(/steward test> $/);
    a1.ws.close();
    await a1.closed;
    // Its place is free again.
    const a3 = await eventually("a console again", () => openConsole(bearer(admin)).catch(() => undefined), WAIT_MS);
    await a3.waitFor(/steward test> $/);
    for (const c of [a2, r1, a3]) c.ws.close();
    await noConsoleProcesses();
  },
);

test.serial(
  "frames a browser could send that are not the protocol get an error or a close; the controller goes on",
  async (t) => {
    const token = await login("admin", tc.adminPassword);
    const unauthenticated = await openConsole({}).then(
      () => undefined,
      (err: ConsoleRefusal) => err,
    );
    t.is(unauthenticated?.status, 401);
    const cases: [string, string | Buffer, number][] = [
      ["binary", Buffer.from([0, 1, 2, 3]), CONSOLE_CLOSE_CODES.binary],
      ["not JSON", "status\r", CONSOLE_CLOSE_CODES.malformed],
      ["not an object", '["input"]', CONSOLE_CLOSE_CODES.malformed],
      ["null", "null", CONSOLE_CLOSE_CODES.malformed],
      ["input not a string", JSON.stringify({ input: 3 }), CONSOLE_CLOSE_CODES.malformed],
      ["unknown key", JSON.stringify({ paste: "x" }), CONSOLE_CLOSE_CODES.malformed],
      ["two keys", JSON.stringify({ input: "x", resize: { cols: 80, rows: 24 } }), CONSOLE_CLOSE_CODES.malformed],
      ["a size out of range", JSON.stringify({ resize: { cols: 0, rows: 24 } }), CONSOLE_CLOSE_CODES.malformed],
      ["a size not a number", JSON.stringify({ resize: { cols: "80", rows: 24 } }), CONSOLE_CLOSE_CODES.malformed],
      ["huge", JSON.stringify({ input: "x".repeat(MAX_CONSOLE_FRAME_BYTES) }), CONSOLE_CLOSE_CODES.tooBig],
    ];
    for (const [what, frame, code] of cases) {
      const c = await openConsole(bearer(token));
      c.ws.send(frame);
      const closed = await c.closed;
      t.is(closed.code, code, what);
      if (code !== CONSOLE_CLOSE_CODES.tooBig) t.like(c.messages.at(-1), { error: { code: "invalid-request" } }, what);
      t.is((await rawRequest(tc.addresses[0]!, tc.caCert, "GET", "/v1/health")).status, 200, `health after ${what}`);
    }
    await noConsoleProcesses();
    // Keys as xterm.js sends them (escape sequences, UTF-8) are just keys.
    const c = await openConsole(bearer(token));
    await c.waitFor(/steward test> $/);
    c.type("\u001b[A\u001b[D\u001bOH ünïcødé ✓ \u0007\u0000\u001b[200~paste\u001b[201~\u0015version\r");
    await c.waitFor(/steward 0\.1\.0/);
    c.ws.close();
    await noConsoleProcesses();
  },
);

test.serial("no input for the idle time ends a console; so does the token's expiry", async (t) => {
  const small = await startTestController({ consoles: { idleMs: 3000 }, tokenLifetimeSeconds: 10 });
  try {
    const idle = await openConsole(bearer(await login("admin", small.adminPassword, small)), small);
    // Not waiting for its prompt: on a loaded machine the idle time may pass before it shows.
    const closed = await idle.closed;
    t.is(closed.code, CONSOLE_CLOSE_CODES.idle);
    t.regex(JSON.stringify(idle.messages.at(-1)), /without input/);

    const busy = await openConsole(bearer(await login("admin", small.adminPassword, small)), small);
    const typing = setInterval(() => {
      if (busy.ws.readyState === busy.ws.OPEN) busy.type("");
    }, 300);
    try {
      t.is(
        (await busy.closed).code,
        CONSOLE_CLOSE_CODES.tokenEnded,
        "typing kept it from idling; the token's end closed it",
      );
    } finally {
      clearInterval(typing);
    }
    await eventually(
      "no console process left",
      async () => (await processesUnder(join(small.dir, "c", "consoles"))).length === 0,
      WAIT_MS,
    );
  } finally {
    await small.close();
  }
});

test("the CLI bundle runs its console's commands through itself; a restricted command process checks its own words", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-webconsole-"));
  const run = (
    script: string,
    args: string[],
    input: string,
  ): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      const p = spawn(process.execPath, [script, ...args], {
        env: { PATH: process.env.PATH, STEWARD_HOME: home, STEWARD_CONSOLE_RESTRICTED: "1" },
      });
      let stdout = "",
        stderr = "";
      p.stdout.on("data", (d: Buffer) => {
        stdout += d.toString();
      });
      p.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      p.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
      p.stdin.end(input);
    });
  const bundled = await run(join(dist, "cli-bundle", "main.js"), [], "version\ndeploy ./x\n");
  t.regex(bundled.stdout, /^steward 0\.1\.0$/m, bundled.stderr);
  t.regex(bundled.stderr, /ERROR deploy needs the steward CLI on your own machine/);
  t.is(bundled.code, 1);
  const direct = await run(
    join(dist, "cli", "main.js"),
    ["add-credential", "x", "--substrate", "ssh", "--file", "/etc/shadow"],
    "",
  );
  t.is(direct.code, 1);
  t.regex(
    direct.stderr,
    /ERROR add-credential needs the steward CLI on your own machine: it reads the credential from local files/,
  );
});

test("keys pasted faster than the screen is read are not read either: the console's memory stays bounded", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-webconsole-"));
  // The heap as the controller bounds it, halved: piling up echo in memory would end the console.
  const p = spawn(process.execPath, ["--max-old-space-size=64", join(dist, "cli", "main.js")], {
    detached: true,
    stdio: ["pipe", "pipe", "pipe", "pipe"],
    env: { PATH: process.env.PATH, STEWARD_HOME: home, STEWARD_CONSOLE_TERMINAL: "web" },
  });
  t.teardown(() => {
    try {
      process.kill(-p.pid!, "SIGKILL");
    } catch {
      /* gone */
    }
  });
  let out = "",
    err = "";
  p.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  p.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  p.stdin.on("error", () => undefined);
  const exited = new Promise<number | null>((resolve) => p.once("exit", (code) => resolve(code)));
  await eventually("the prompt", () => /steward \(no controller\)> /.test(out), WAIT_MS);
  // Wide enough that no line wraps (a wrapped line is redrawn, not echoed in one piece).
  const before = out.length;
  (p.stdio[3] as Writable).write(`${JSON.stringify({ resize: { cols: 1000, rows: 50 } })}\n`);
  await eventually("the prompt redrawn for the new width", () => out.length > before, WAIT_MS);
  p.stdout.pause(); // a browser that reads nothing
  const lines = 30_000;
  const line = `# ${"x".repeat(97)}\r`;
  for (let i = 0; i < lines; i += 500) p.stdin.write(line.repeat(500));
  let last = -1;
  await eventually(
    "the console to stop taking keys",
    () => {
      const now = p.stdin.writableLength;
      const stalled = now === last;
      last = now;
      return stalled || p.exitCode !== null;
    },
    60_000,
    1000,
  );
  t.is(p.exitCode, null, `the console is alive: ${err.slice(0, 300)}`);
  t.true(p.stdin.writableLength > (lines * line.length) / 2, "most keys wait outside the console");
  p.stdout.resume();
  await eventually("every key taken", () => p.stdin.writableLength === 0, 90_000, 200);
  p.stdin.write("exit\r");
  t.is(await exited, 0, err.slice(0, 300));
  t.true(out.split("\r\n").length - 1 >= lines, "every line was taken (the line editor ends each with \\r\\n)");
});

test("the allow-list: every command is either allowed or refused with its reason; local files and paths are refused within allowed ones", (t) => {
  for (const name of COMMAND_NAMES) {
    const why = restrictedRefusal([name]);
    if (WEB_CONSOLE_COMMANDS[name]) t.is(why, undefined, name);
    else
      t.regex(
        why ?? "",
        /needs the steward CLI on your own machine|use MODEL|dashboard|your own shell|show-controller/,
        name,
      );
  }
  t.is(restrictedRefusal(["config", "web", "greeting=--file"]), undefined, "a value is not an option");
  t.is(restrictedRefusal(["status", "--watch", "-m", "prod"]), undefined);
  t.regex(
    restrictedRefusal(["enable-ha", "--to", "ssh:a@b", "--key-file", "k"]) ?? "",
    /enable-ha --key-file needs the steward CLI on your own machine: it reads a local key file/,
  );
  t.regex(
    restrictedRefusal(["add-model", "m", "--substrate", "aws", "--endpoint-ca-file=/etc/ssl/x.pem"]) ?? "",
    /--endpoint-ca-file/,
  );
  t.regex(restrictedRefusal(["add-machine", "aws", "--key-env", "HOME"]) ?? "", /reads the host's environment/);
  t.regex(
    restrictedRefusal(["status", "--cache-dir", "/tmp"]) ?? "",
    /--cache-dir/,
    "an option naming a directory is refused even before it exists",
  );
  t.regex(restrictedRefusal(["logout"]) ?? "", /log out from the dashboard/);
});
