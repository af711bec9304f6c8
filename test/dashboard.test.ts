/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core) against a real
 * controller and real agents: logging in, live changes without reloads, config edited in the page
 * reaching the units, the controller view (with a newer signed release shown as available), a
 * read-only user, a failed hook's output, and no Content-Security-Policy
 * violation anywhere. Screenshots of the main views go to dist/test-artifacts/dashboard.
 */
import test from "ava";
import { X509Certificate } from "node:crypto";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { STEWARD_VERSION, STORE_FORMAT } from "../api";
import { generateReleaseKey, signRelease } from "../controller";
import type { TestController } from "./harness/controller";
import { allReady, operatorsDir, startTestController } from "./harness/controller";
import { cspViolations, launchBrowser, logInThroughPage, openDashboard } from "./harness/browser";
import { eventually } from "./harness/eventually";

let tc: TestController;
let browser: Browser;
let releases: string;
const viewerPassword = "viewer-password-1";
/** A signed release newer than this build, in the controller's release source: shown as available. */
const NEWER = STEWARD_VERSION.replace(/\d+$/, (p) => String(Number(p) + 9));

/** A release source holding a small signed release `version` (an agent bundle only), and the key it trusts. */
async function releaseSource(version: string): Promise<{ source: string; keys: string[] }> {
  const source = await mkdtemp(join(tmpdir(), "steward-dash-releases-"));
  const key = generateReleaseKey();
  await mkdir(join(source, version, "agent-bundle"), { recursive: true });
  await writeFile(join(source, version, "agent-bundle", "main.js"), `console.log("agent ${version}");\n`);
  await signRelease(join(source, version), version, key.privateKeyPem);
  return { source, keys: [key.publicKey] };
}

/** motd, but its config-changed refuses a message that starts with "fail:" and says why. */
async function failingMotd(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-op-"));
  await cp(join(operatorsDir, "motd"), dir, { recursive: true });
  const hook = join(dir, "hooks", "config-changed");
  const text = await readFile(hook, "utf8");
  await writeFile(
    hook,
    text.replace(
      'message="$(config-get message)"\n',
      'message="$(config-get message)"\ncase "$message" in fail:*) echo "refusing message: $message (it starts with fail:)"; exit 3;; esac\n',
    ),
  );
  await chmod(hook, 0o755);
  return dir;
}

test.before(async () => {
  const source = await releaseSource(NEWER);
  releases = source.source;
  tc = await startTestController({ releases: source });
  await tc.admin.createModel("shop");
  await tc.admin.createUser("viewer", viewerPassword);
  await tc.admin.grant("shop", "viewer", "read");
  await tc.admin.deploy("shop", { name: "board", operator: await tc.upload(await failingMotd()), units: 2 });
  await tc.waitForUnits("shop", allReady(2), "board active", 60_000);
  browser = await launchBrowser();
});
test.after.always(async () => {
  await browser?.close();
  await tc?.close();
  if (releases) await rm(releases, { recursive: true, force: true });
});

const address = (): string => tc.addresses[0]!;

/**
 * Waits until the console pane's screen matches `pattern`. A long line wraps mid-word at the terminal's width, and
 * the rows read back one per line, so the rows are also matched joined; a timeout shows what the screen held.
 */
async function terminalShows(page: Page, pattern: RegExp, what: string): Promise<void> {
  let last = "";
  try {
    await eventually(
      what,
      async () => {
        last = await page.locator(".terminal .xterm-rows").innerText();
        return pattern.test(last) || pattern.test(last.replace(/\n/g, ""));
      },
      60_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; the screen showed:\n${last}`);
  }
}

test.serial(
  "log in; the model shows its units; a config change made with the CLI appears without a reload",
  async (t) => {
    const d = await openDashboard(browser, address());
    const { page } = d;
    await page.waitForSelector("input[name=password]");
    await d.screenshot("login");
    // A wrong password is refused in the page, and nothing is stored.
    await page.fill("input[name=user]", "admin");
    await page.fill("input[name=password]", "not-the-password");
    await page.click("button[type=submit]");
    await page.waitForSelector(".error-note");
    t.regex((await page.textContent(".error-note")) ?? "", /wrong user name or password/);
    await logInThroughPage(page, "admin", tc.adminPassword);
    // The session token is in an HttpOnly cookie: page scripts cannot read it.
    t.false((await page.evaluate<string>("document.cookie")).includes("steward-session"));
    const cookie = (await d.context.cookies()).find((c) => c.name === "steward-session");
    t.truthy(cookie);
    t.true(cookie!.httpOnly && cookie!.secure && cookie!.sameSite === "Strict");
    await page.click("a.tile[data-model=shop]");
    await page.waitForSelector('tr[data-unit="board/1"][data-workload=active]');
    await d.screenshot("model");
    await page.evaluate("window.marker = 42");
    await tc.admin.updateApplication("shop", "board", { config: { message: "set from the CLI" } });
    await page.waitForSelector('tr[data-unit="board/0"][data-message="motd: set from the CLI"]', { timeout: 30_000 });
    await page.waitForSelector('tr[data-unit="board/1"][data-message="motd: set from the CLI"]', { timeout: 30_000 });
    t.is(await page.evaluate<number>("window.marker"), 42, "the page was not reloaded");
    // Filtering narrows the units shown.
    await page.fill("input.search", "board/1");
    await page.waitForSelector('tr[data-unit="board/0"]', { state: "detached" });
    t.is(await page.locator("tr[data-unit]").count(), 1);
    t.deepEqual(await cspViolations(page), []);
    t.deepEqual(d.problems, []);
    await d.context.close();
  },
);

test.serial("a config edit made in the page reaches the units; the controller view shows the replica", async (t) => {
  const d = await openDashboard(browser, address());
  const { page } = d;
  await logInThroughPage(page, "admin", tc.adminPassword);
  await page.goto(`https://${address()}/#/models/shop/applications/board`);
  await page.waitForSelector("input[name=message]");
  await page.fill("input[name=message]", "set in the page");
  await page.check("input[name=uppercase]");
  await d.screenshot("application-editing");
  await page.click("button[name=save-config]");
  const s = await tc.waitForUnits(
    "shop",
    (units) => units.length === 2 && units.every((u) => u.workload.message === "motd: SET IN THE PAGE"),
    "units to publish the page's config",
    60_000,
  );
  t.is(s.applications.board!.config.message, "set in the page");
  t.is(s.applications.board!.config.uppercase, true);
  // A value the schema refuses is caught in the page before anything is sent.
  await page.fill("input[name=message]", "x".repeat(70_000));
  await page.waitForSelector(".field-problem");
  t.true(await page.locator("button[name=save-config]").isDisabled());
  await page.goto(`https://${address()}/#/controller`);
  await page.waitForSelector("h1:has-text('Controller test')");
  await page.waitForSelector("tr[data-replica] td code");
  // The release the leader verified from its source, offered and not applied.
  await page.waitForSelector(`[data-releases-available]:has-text("${NEWER} available")`);
  // A store bootstrapped by this release is in its format, with no migration.
  t.is(await page.locator("[data-store-format]").textContent(), `Store format ${STORE_FORMAT}`);
  await d.screenshot("controller");
  t.deepEqual(await cspViolations(page), []);
  t.deepEqual(d.problems, []);
  await d.context.close();
});

test.serial(
  "a read-only user sees no write controls, and the controller refuses writes from the page anyway",
  async (t) => {
    const d = await openDashboard(browser, address());
    const { page } = d;
    await logInThroughPage(page, "viewer", viewerPassword);
    await page.goto(`https://${address()}/#/models/shop/applications/board`);
    await page.waitForSelector("input[name=message]");
    await page.waitForSelector("text=You have read access to this model");
    t.is(await page.locator("button[name=save-config]").count(), 0);
    t.is(await page.locator("button[name=add-units]").count(), 0);
    t.is(await page.locator("button[name=remove-application]").count(), 0);
    t.true(await page.locator("input[name=message]").evaluate((e) => (e as unknown as { readOnly: boolean }).readOnly));
    await d.screenshot("application-read-only");
    // The same write the page would make, sent from the page with the session's CSRF token: refused.
    const res = await page.evaluate(async () => {
      const s = (await (await fetch("/v1/session")).json()) as { csrf: string };
      const r = await fetch("/v1/models/shop/applications/board", {
        method: "PATCH",
        headers: { "content-type": "application/json", "x-steward-csrf": s.csrf },
        body: JSON.stringify({ config: { message: "viewer" } }),
      });
      return { status: r.status, body: (await r.json()) as { code: string; message: string } };
    });
    t.is(res.status, 403);
    t.regex(res.body.message, /viewer has read access to model shop; this needs write/);
    // The controller page shows a user who is not a superuser its overview, not the cluster's layout.
    await page.goto(`https://${address()}/#/controller`);
    await page.waitForSelector("h1:has-text('Controller test')");
    t.is(await page.locator("[data-ca-fingerprint]").textContent(), new X509Certificate(tc.caCert).fingerprint256);
    t.is(await page.locator("tr[data-replica]").count(), 0);
    t.is(await page.locator("[data-store-format]").count(), 0);
    t.regex((await page.locator("[data-releases-available]").textContent()) ?? "", new RegExp(`${NEWER} available`));
    // Without the CSRF token, even an admin's session cannot write.
    const admin = await openDashboard(browser, address());
    await logInThroughPage(admin.page, "admin", tc.adminPassword);
    const forged = await admin.page.evaluate(async () => {
      const r = await fetch("/v1/models/shop/applications/board", {
        method: "PATCH",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ config: { message: "forged" } }),
      });
      return { status: r.status, body: (await r.json()) as { message: string } };
    });
    t.is(forged.status, 403);
    t.regex(forged.body.message, /x-steward-csrf/);
    t.not((await tc.admin.status("shop")).applications.board!.config.message, "forged");
    await admin.context.close();
    t.deepEqual(d.problems, []);
    await d.context.close();
  },
);

test.serial(
  "a unit whose hook fails shows the hook and its output; retrying from the page brings it back",
  async (t) => {
    const d = await openDashboard(browser, address());
    const { page } = d;
    await logInThroughPage(page, "admin", tc.adminPassword);
    await page.goto(`https://${address()}/#/models/shop/units/board/0`);
    await page.waitForSelector("h1:has-text('board/0')");
    await tc.admin.updateApplication("shop", "board", { config: { message: "fail: on purpose" } });
    await page.waitForSelector("[data-failure]", { timeout: 60_000 });
    const failure = (await page.textContent("[data-failure]")) ?? "";
    t.regex(failure, /Hook config-changed failed/);
    t.regex(failure, /refusing message: fail: on purpose \(it starts with fail:\)/);
    await page.waitForSelector("text=Status history");
    await d.screenshot("unit-error");
    await tc.admin.updateApplication("shop", "board", { config: { message: "fixed" } });
    await page.click("button[name=resolve-retry]");
    await page.waitForSelector("[data-failure]", { state: "detached", timeout: 60_000 });
    await eventually(
      "board/0 to be active again",
      async () => {
        const s = await tc.admin.status("shop");
        return s.applications.board!.units["board/0"]!.workload.message === "motd: FIXED";
      },
      60_000,
    );
    t.deepEqual(await cspViolations(page), []);
    t.deepEqual(d.problems, []);
    await d.context.close();
  },
);

test.serial("the console opened from a model's page starts in that model", async (t) => {
  const d = await openDashboard(browser, address());
  const { page } = d;
  await logInThroughPage(page, "viewer", viewerPassword);
  await page.goto(`https://${address()}/#/models/shop`);
  await page.click("a.nav-link:has-text('Console')");
  t.regex(page.url(), /#\/console\/shop$/);
  await page.waitForSelector(".terminal .xterm");
  await terminalShows(page, /steward test:shop> *$/m, "the prompt in model shop");
  t.is(await page.locator("select.model-pick").inputValue(), "shop", "the page still shows the model");
  await page.click(".terminal");
  await page.keyboard.type("status");
  await page.keyboard.press("Enter");
  await terminalShows(page, /board\/0\*?\s+\w+/, "status of shop, no -m");
  t.deepEqual(d.problems, []);
  await d.context.close();
});

test.serial(
  "the console pane runs the console as the logged-in user: status, and a refusal for what reads local files",
  async (t) => {
    const d = await openDashboard(browser, address());
    const { page } = d;
    await logInThroughPage(page, "viewer", viewerPassword);
    await page.click("a.nav-link:has-text('Console')");
    await page.waitForSelector(".terminal .xterm");
    await terminalShows(page, /steward test> *$/m, "the console's prompt");
    await page.click(".terminal");
    await page.keyboard.type("status -m shop");
    await page.keyboard.press("Enter");
    await terminalShows(page, /board\/0\*?\s+(active|error|maintenance)/, "status in the pane");
    await d.screenshot("console");
    // The viewer may read but not write; the console says so rather than doing it.
    await page.keyboard.type("config board message=from-the-viewer -m shop");
    await page.keyboard.press("Enter");
    await terminalShows(page, /viewer has read access to model shop/, "the refusal");
    await page.keyboard.type("deploy ./somewhere -m shop");
    await page.keyboard.press("Enter");
    await terminalShows(page, /deploy needs the steward CLI on your own machine/, "deploy refused in the web console");
    t.not((await tc.admin.status("shop")).applications.board!.config.message, "from-the-viewer");
    t.deepEqual(await cspViolations(page), [], "xterm's styles go through constructable sheets, not inline styles");
    t.deepEqual(d.problems, []);
    await d.context.close();
  },
);
