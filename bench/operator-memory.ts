/**
 * Memory an embedded store takes for the operators it stores: operators uploaded through
 * StateOps.putOperator (chunked, as the controller stores them), then the growth of the process's
 * RSS and heap after a full GC, and the characters of values the store keeps in memory.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { readOperatorDir } from "../api";
import { EmbeddedStore, StateOps } from "../controller";
import type { BenchOptions } from "./util";
import { report } from "./util";

const MB = 1_000_000;

/** `size`: megabytes of operator content stored (default 96, in operators of at most 8 MB). */
export async function benchOperatorMemory(o: BenchOptions = {}): Promise<void> {
  const totalMB = o.size ?? 96;
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const motd = (await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"))).bundle;
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-operators-"));
  const store = await EmbeddedStore.open({ dir });
  const ops = new StateOps(store);
  const settle = (): NodeJS.MemoryUsage => {
    gc();
    gc();
    return process.memoryUsage();
  };
  const before = settle();
  let stored = 0;
  while (stored < totalMB * MB) {
    const raw = Math.min(8 * MB, Math.ceil(((totalMB * MB - stored) * 3) / 4));
    const bundle = {
      files: [...motd.files, { path: "payload.bin", mode: 0o644, content: randomBytes(raw).toString("base64") }],
    };
    stored += (await ops.operators.upload(bundle, { quotaBytes: Number.MAX_SAFE_INTEGER })).doc.bytes;
  }
  const after = settle();
  const inMemory = store.valueCharsInMemory();
  await store.close();
  await rm(dir, { recursive: true, force: true });
  report("embedded store holding operators (growth after a full GC)", {
    "operator content stored (MB)": stored / MB,
    "RSS growth (MB)": (after.rss - before.rss) / MB,
    "heap and external growth (MB)": (after.heapUsed + after.external - before.heapUsed - before.external) / MB,
    "value characters held in memory (M)": inMemory / MB,
  });
}
