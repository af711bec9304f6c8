/**
 * `pulumi refresh` of a model with 100 applications, as the provider process runs it: 100
 * Application reads at once. Prints the time and how many HTTP requests reached the controller
 * (one shared status per model instead of one or more per resource).
 */
import { join } from "node:path";
import { readOperatorDir } from "../api";
import { implementations as providers, requestCount } from "../provider";
import type { ApplicationOutputs } from "../provider";
import { benchController } from "./bench-controller";
import type { BenchOptions } from "./util";

/** `size`: applications (default 100). */
export async function benchProviderRefresh(o: BenchOptions = {}): Promise<void> {
  const apps = o.size ?? 100;
  const ctl = await benchController("refresh");
  try {
    const operator = join(__dirname, "..", "..", "operators", "motd");
    const { bundle, hash } = await readOperatorDir(operator);
    await ctl.client.uploadOperator(bundle);
    const connection = { addresses: ctl.addresses, caCert: ctl.caCert, user: "admin", password: ctl.password };
    const outs: ApplicationOutputs[] = [];
    for (let i = 0; i < apps; i++) {
      const name = `app-${i}`;
      await ctl.client.deploy("refresh", { name, operator: hash, units: 0 });
      outs.push({
        connection,
        model: "refresh",
        name,
        operator: { path: operator, hash },
        units: 0,
        config: {},
        waitFor: "none",
        timeoutSeconds: 60,
        deleteTimeoutSeconds: 60,
        forceDelete: false,
        adopt: false,
        uid: `u${i}`,
        unitNames: [],
        operatorVersion: "1.0.0",
        status: "unknown",
        configDefaults: {},
      });
    }
    for (const round of [1, 2, 3]) {
      const before = requestCount();
      const t0 = performance.now();
      const read = await Promise.all(outs.map((o) => providers.application.read(`refresh/${o.name}/${o.uid}`, o)));
      const ms = performance.now() - t0;
      const found = read.filter((r) => "id" in r && r.id).length;
      console.log(
        `refresh round ${round}: ${apps} applications read (${found} found) in ${ms.toFixed(0)} ms with ${requestCount() - before} controller requests`,
      );
      await new Promise((r) => setTimeout(r, 2500)); // past the shared status's lifetime
    }
  } finally {
    await ctl.stop();
  }
}
