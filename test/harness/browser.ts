/**
 * A real browser for dashboard tests and benchmarks: Debian's Chromium, headless, driven by
 * playwright-core. It trusts the test controller's certificate by skipping verification in its
 * context only (what is tested is the page, not TLS), records every Content-Security-Policy
 * violation and page error, and saves screenshots where a person can look at them.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.STEWARD_CHROMIUM ?? "/usr/bin/chromium";
/** Where screenshots go: dist/test-artifacts/dashboard (not committed; those in docs/ are copied by hand). */
export const SCREENSHOTS = join(__dirname, "..", "..", "test-artifacts", "dashboard");

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

export interface DashboardPage {
  context: BrowserContext;
  page: Page;
  /** CSP violations and uncaught page errors seen so far. */
  problems: string[];
  screenshot(name: string): Promise<string>;
}

export async function openDashboard(browser: Browser, address: string): Promise<DashboardPage> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1360, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[13]|Failed to load resource/.test(m.text()))
      problems.push(`console error: ${m.text()}`);
  });
  // The page's own report of what its policy refused (the console message alone can be missed).
  await page.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => {
    (window.__cspViolations ??= []).push(e.violatedDirective + " blocked " + (e.blockedURI || "inline"));
  });`);
  await page.goto(`https://${address}/`);
  return {
    context,
    page,
    problems,
    async screenshot(name) {
      await mkdir(SCREENSHOTS, { recursive: true });
      const path = join(SCREENSHOTS, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
  };
}

export async function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate<string[]>("window.__cspViolations ?? []");
}

export async function logInThroughPage(page: Page, user: string, password: string): Promise<void> {
  await page.fill("input[name=user]", user);
  await page.fill("input[name=password]", password);
  await page.click("button[type=submit]");
  // The page either shows the app or says why not: a refusal fails here with its words, not a bare timeout.
  // 60 s: a login hashes a password on a controller that shares two cores with the rest of the suite.
  await page.waitForSelector(".topbar, .error-note", { timeout: 60_000 });
  const refusal = page.locator(".error-note");
  if ((await refusal.count()) > 0 && (await page.locator(".topbar").count()) === 0)
    throw new Error(`the dashboard refused ${user}'s login: ${await refusal.first().innerText()}`);
}
