/** The embedded store: acknowledged (fsynced) writes per second, one writer and 64 concurrent (group commit). */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedStore } from "../controller";
import type { BenchOptions } from "./util";
import { report } from "./util";

/** `size`: writes by the 64 concurrent writers (default 20,000); ten times as many reads. */
export async function benchStore(o: BenchOptions = {}): Promise<void> {
  const N2 = o.size ?? 20_000;
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-store-"));
  const s = await EmbeddedStore.open({ dir });
  const value = JSON.stringify({ status: "active", message: "x".repeat(200) });
  let t = Date.now();
  const N1 = Math.min(500, N2);
  for (let i = 0; i < N1; i++) await s.put(`/seq/${i}`, value);
  const seq = (N1 * 1000) / (Date.now() - t);
  t = Date.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (n < N2) await s.put(`/par/${n++}`, value);
    }),
  );
  const par = (N2 * 1000) / (Date.now() - t);
  t = Date.now();
  const N3 = N2 * 10;
  for (let i = 0; i < N3; i++) await s.get(`/par/${i % N2}`);
  const reads = (N3 * 1000) / (Date.now() - t);
  await s.close();
  await rm(dir, { recursive: true, force: true });
  report("embedded store (writes fsynced before acknowledgement)", {
    "sequential writes per second (1 writer)": seq,
    "writes per second, 64 concurrent writers": par,
    "reads per second (1 reader)": reads,
  });
}
