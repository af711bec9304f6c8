/**
 * Secrets in the dashboard (issue 33), in a real browser (Debian's Chromium through playwright-core)
 * against a real controller: the model's Secrets view lists a user secret's metadata (owner,
 * revision, rotation, grants) and never its value, until an explicit Reveal by someone allowed (a
 * superuser here); a user who did not make it (a reader) is refused, and the page shows the
 * controller's refusal. A new revision shows without a reload. Screenshots go to dist/test-artifacts/dashboard.
 */
import test from "ava";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { routes } from "../api";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { cspViolations, launchBrowser, logInThroughPage, openDashboard } from "./harness/browser";

let tc: TestController;
let browser: Browser;
const VALUE = "dashboard-secret-value-7c2e91";
const VALUE2 = "dashboard-secret-value-second-4b18";

test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("vault");
  await tc.admin.createUser("rob", "rob-password-1");
  await tc.admin.grant("vault", "rob", "read");
  // An application to grant the secret to (no unit: the grant is what is shown).
  const op = await tc.upload(join(operatorsDir, "notebook"));
  await tc.admin.deploy("vault", { name: "notebook", operator: op, units: 0 });
  browser = await launchBrowser();
});
test.after.always(async () => {
  await browser?.close();
  await tc?.close();
});

test("the Secrets view shows metadata only, reveals a value to a superuser and shows a reader's refusal", async (t) => {
  t.timeout(180_000);
  const added = await tc.admin.call(
    routes.addSecret,
    { model: "vault" },
    { name: "db-pass", values: { password: VALUE }, description: "the database's password" },
  );
  await tc.admin.call(routes.grantSecret, { model: "vault", secret: "db-pass" }, { apps: ["notebook"] });
  const address = tc.addresses[0]!;

  // A reader who did not make it sees the metadata and is refused the value.
  const r = await openDashboard(browser, address);
  await logInThroughPage(r.page, "rob", "rob-password-1");
  await r.page.goto(`https://${address}/#/models/vault`);
  await r.page.click("a[data-secrets-link]");
  const row = `tr[data-secret="${added.uri}"]`;
  await r.page.waitForSelector(row);
  t.regex((await r.page.locator(row).innerText()) ?? "", /db-pass[\s\S]*model[\s\S]*never[\s\S]*notebook/);
  t.false((await r.page.content()).includes(VALUE), "no value before a reveal");
  await r.page.click(`${row} button[name=reveal]`);
  const refusal = await r.page.waitForSelector(`${row} .error-note`);
  t.regex(
    (await refusal.innerText()) ?? "",
    /only the user who made db-pass or a controller superuser may reveal its values/,
    "the route's refusal is shown",
  );
  t.false((await r.page.content()).includes(VALUE), "a refused reveal shows no value");
  await r.screenshot("secrets-refused");
  await r.context.close();

  // A superuser reveals it; Hide takes it away.
  const d = await openDashboard(browser, address);
  const { page } = d;
  await logInThroughPage(page, "admin", tc.adminPassword);
  await page.goto(`https://${address}/#/models/vault/secrets`);
  await page.waitForSelector(`${row} [data-secret-revision="1"]`);
  await page.evaluate("window.marker = 7");
  t.false((await page.content()).includes(VALUE));
  await d.screenshot("secrets");
  await page.click(`${row} button[name=reveal]`);
  const values = `tr[data-secret-values="${added.uri}"]`;
  await page.waitForSelector(`${values}:has-text("${VALUE}")`);
  t.regex(await page.locator(values).innerText(), /Revision 1:[\s\S]*password/);
  await d.screenshot("secrets-revealed");
  await page.click(`${row} button[name=hide]`);
  await page.waitForSelector(values, { state: "detached" });
  t.false((await page.content()).includes(VALUE), "hidden again");

  // A new revision shows without a reload, and a reveal then gives its values.
  await tc.admin.call(routes.updateSecret, { model: "vault", secret: "db-pass" }, { values: { password: VALUE2 } });
  await page.waitForSelector(`${row} [data-secret-revision="2"]`, { timeout: 30_000 });
  await page.click(`${row} button[name=reveal]`);
  await page.waitForSelector(`${values}:has-text("${VALUE2}")`);
  t.is(await page.evaluate<number>("window.marker"), 7, "the page was not reloaded");
  t.deepEqual(await cspViolations(page), []);
  t.deepEqual(d.problems, []);
  await d.context.close();
});
