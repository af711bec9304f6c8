/**
 * The dashboard's live view (target: a state change on the controller reaches the screen, p95 ≤ 1 s,
 * with 1,000 units). A real controller process, simulated agents (one per unit), and the dashboard
 * in headless Chromium showing the model. Each trial has agents report new workload messages; the
 * page timestamps the animation frame after the row changes. Also: the bytes the feed sent per
 * change and for the first status, and the page's JS heap.
 */
import type { Page } from "playwright-core";
import { launchBrowser, logInThroughPage, openDashboard } from "../test/harness/browser";
import { benchController, deploySimulated } from "./bench-controller";
import type { SimAgent } from "./sim-agent";
import type { BenchOptions } from "./util";
import { median, percentile, report, sleep } from "./util";

const DEFAULT_UNITS = Number(process.env.BENCH_UNITS ?? 1000);

/** What the page's globals look like to the functions run there. */
interface PageGlobals {
  document: { querySelectorAll(s: string): { length: number } };
  __seenAt: Record<string, number>;
}

/** Records, in the page, when each row's message first shows a value (at the next animation frame). */
const WATCH_ROWS = `(() => {
  window.__seenAt = {};
  new MutationObserver((records) => {
    const fresh = [];
    for (const r of records) {
      const v = r.target.getAttribute && r.target.getAttribute("data-message");
      if (v && v.startsWith("trial-") && !(v in window.__seenAt)) fresh.push(v);
    }
    if (fresh.length) requestAnimationFrame(() => { const at = performance.timeOrigin + performance.now(); for (const v of fresh) window.__seenAt[v] ??= at; });
  }).observe(document.body, { attributes: true, attributeFilter: ["data-message"], subtree: true });
})()`;

/** `size`: units (default 1,000, or BENCH_UNITS); `trials`: single changes, then as many bursts of 5% of the units. */
export async function benchDashboardLive(o: BenchOptions & { trials?: number } = {}): Promise<void> {
  const UNITS = o.size ?? DEFAULT_UNITS;
  const TRIALS = o.trials ?? 30;
  const bc = await benchController("live");
  const { addresses } = bc;
  const agents: SimAgent[] = [];
  const browser = await launchBrowser();
  try {
    await deploySimulated(bc, "live", UNITS, agents);
    const units = await Promise.all(
      agents.map(async (a) => (await a.viewWhere((v) => v.units.length === 1)).units[0]!.name),
    );
    const report1 = (i: number, message: string): Promise<unknown> =>
      agents[i]!.call("unit.status", {
        unit: units[i],
        workload: { current: "active", message },
        agent: { current: "idle", message: "" },
      });
    await Promise.all(units.map((_, i) => report1(i, "ready")));

    const d = await openDashboard(browser, addresses[0]!);
    let feedBytes = 0;
    let firstStatusBytes = 0;
    const frames: number[] = [];
    d.page.on("websocket", (ws) =>
      ws.on("framereceived", (f) => {
        const n = typeof f.payload === "string" ? Buffer.byteLength(f.payload) : f.payload.length;
        feedBytes += n;
        if (!firstStatusBytes && String(f.payload).startsWith('{"topic":"model:live","status"')) firstStatusBytes = n;
        frames.push(n);
      }),
    );
    await logInThroughPage(d.page, "admin", bc.password);
    const t0Page = performance.now();
    await d.page.goto(`https://${addresses[0]}/#/models/live`);
    // Functions, not strings: the page's CSP (no 'unsafe-eval') refuses what playwright would eval from a string.
    await d.page.waitForFunction(
      (n) => (globalThis as unknown as PageGlobals).document.querySelectorAll("tr[data-unit]").length === n,
      UNITS,
      { timeout: 120_000, polling: 100 },
    );
    const firstScreenMs = performance.now() - t0Page;
    await d.page.evaluate(WATCH_ROWS);
    await sleep(500);

    const latencies = { single: [] as number[], burst: [] as number[] };
    const bytesBefore = feedBytes;
    const framesBefore = frames.length;
    for (let trial = 0; trial < TRIALS * 2; trial++) {
      const burst = trial >= TRIALS;
      const picks = burst
        ? [
            ...new Set(
              Array.from({ length: Math.max(1, Math.round(UNITS / 20)) }, () => Math.floor(Math.random() * UNITS)),
            ),
          ]
        : [Math.floor(Math.random() * UNITS)];
      const sent = new Map<string, number>();
      await Promise.all(
        picks.map((i) => {
          const message = `trial-${trial}-${i}`;
          sent.set(message, Date.now());
          return report1(i, message);
        }),
      );
      const seen = await waitForSeen(d.page, [...sent.keys()]);
      for (const [m, at] of Object.entries(seen)) (burst ? latencies.burst : latencies.single).push(at - sent.get(m)!);
      await sleep(burst ? 400 : 250);
    }
    const heap = await d.page.evaluate<number>("performance.memory ? performance.memory.usedJSHeapSize : 0");
    const all = [...latencies.single, ...latencies.burst];
    report(
      `dashboard live view of ${UNITS} units in Chromium (${TRIALS} single changes, ${TRIALS} bursts of ${Math.max(1, Math.round(UNITS / 20))})`,
      {
        "state change → screen, p95 over all (ms)": percentile(all, 95),
        "single change: median / p95 (ms)": `${Math.round(median(latencies.single))} / ${Math.round(percentile(latencies.single, 95))}`,
        "burst: median / p95 / max (ms)": `${Math.round(median(latencies.burst))} / ${Math.round(percentile(latencies.burst, 95))} / ${Math.round(Math.max(...latencies.burst))}`,
        "login to the model's first screen (ms)": Math.round(firstScreenMs),
        "first status sent (KiB)": (firstStatusBytes / 1024).toFixed(1),
        "feed bytes per message during the trials (median)": median(frames.slice(framesBefore)),
        "feed bytes during the trials (KiB)": ((feedBytes - bytesBefore) / 1024).toFixed(1),
        "page JS heap (MiB)": (heap / 1048576).toFixed(1),
      },
    );
    await d.context.close();
  } finally {
    await browser.close();
    for (const a of agents) a.close();
    await bc.stop();
  }
}

/** Waits until the page has seen every message; fails the benchmark after 30 s rather than hang. */
async function waitForSeen(page: Page, messages: string[]): Promise<Record<string, number>> {
  await page.waitForFunction(
    (list) => list.every((m) => m in (globalThis as unknown as PageGlobals).__seenAt),
    messages,
    { timeout: 30_000, polling: 50 },
  );
  return page.evaluate(
    (list) => Object.fromEntries(list.map((m) => [m, (globalThis as unknown as PageGlobals).__seenAt[m]!])),
    messages,
  );
}
