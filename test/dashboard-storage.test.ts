/**
 * Storage in the dashboard (issue 32), in a real browser (Debian's Chromium through playwright-core)
 * against a real controller and real agents: the model view lists the model's storage instances and
 * follows them live (a deployed unit's storage appears, is kept detached when the unit goes, and is
 * shown attached to the new unit given it), and the unit view shows the unit's own storage, all
 * without a reload. Screenshots go to dist/test-artifacts/dashboard.
 */
import test from "ava";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { cspViolations, launchBrowser, logInThroughPage, openDashboard } from "./harness/browser";

let tc: TestController;
let browser: Browser;

test.before(async () => {
  tc = await startTestController();
  await tc.admin.createModel("notes");
  browser = await launchBrowser();
});
test.after.always(async () => {
  await browser?.close();
  await tc?.close();
});

const row = (id: string, attrs: string): string => `tr[data-storage="${id}"]${attrs}`;

test("the model view follows its storage live: a unit's storage appears, is kept when the unit goes, and moves to a new unit", async (t) => {
  t.timeout(300_000);
  const address = tc.addresses[0]!;
  const d = await openDashboard(browser, address);
  const { page } = d;
  await logInThroughPage(page, "admin", tc.adminPassword);
  await page.goto(`https://${address}/#/models/notes`);
  await page.waitForSelector("text=No storage: no operator here declares any.");
  await page.evaluate("window.marker = 42");

  const op = await tc.upload(join(operatorsDir, "notebook"));
  await tc.admin.deploy("notes", { name: "notebook", operator: op, units: 1 });
  // Attached, with the directory where its hooks find it, once the volume broker has made it.
  const attached = row("data/0", '[data-storage-status=attached][data-storage-unit="notebook/0"]');
  await page.waitForSelector(attached, { timeout: 60_000 });
  await page.waitForSelector(`${attached} td.message:has-text("/storage/data-0")`, { timeout: 60_000 });
  const cells = await page.locator(`${row("data/0", "")} td`).allTextContents();
  t.deepEqual(cells.slice(0, 5), ["data/0", "notebook/0", "local", "64M", "attached"]);
  await d.screenshot("model-storage");

  // The unit view shows the unit's storage.
  await page.click(`${row("data/0", "")} a:has-text("notebook/0")`);
  await page.waitForSelector(`h1:has-text("notebook/0")`);
  await page.waitForSelector(row("data/0", "[data-storage-status=attached]"));
  t.deepEqual((await page.locator(`${row("data/0", "")} td`).allTextContents()).slice(0, 4), [
    "data/0",
    "local",
    "64M",
    "attached",
  ]);
  await d.screenshot("unit-storage");
  await page.goBack();

  // The unit goes: its storage is kept, detached, and says so where it lists it.
  await page.waitForSelector(attached);
  await tc.admin.removeUnit("notes", "notebook/0");
  const kept = row("data/0", '[data-storage-status=detached][data-storage-unit=""]');
  await page.waitForSelector(kept, { timeout: 60_000 });
  await page.waitForSelector(`${kept} td.message:has-text("on no machine")`);
  t.regex((await page.locator(`${kept} td`).nth(1).textContent()) ?? "", /kept \(notebook\)/);
  await d.screenshot("model-storage-kept");

  // Given to a new unit: shown attached to it.
  await tc.admin.addUnits("notes", "notebook", 1, undefined, ["data/0"]);
  await page.waitForSelector(row("data/0", '[data-storage-status=attached][data-storage-unit="notebook/1"]'), {
    timeout: 60_000,
  });
  t.is(await page.evaluate<number>("window.marker"), 42, "the page was not reloaded");
  t.is(await page.locator("tr[data-storage]").count(), 1);
  t.deepEqual(await cspViolations(page), []);
  t.deepEqual(d.problems, []);
  await d.context.close();
});
