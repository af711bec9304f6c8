/**
 * Operator content on the machine: fetched once per content hash, verified against that hash, and
 * unpacked atomically into `<agent-dir>/operators/<hash>/`, shared by every unit that runs it.
 */
import { request } from "node:https";
import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Bundle } from "../api/core";
import { CONTROLLER_TLS_NAME, StewardError, bundleHash, errorFromWire, splitAddress } from "../api/core";

export class OperatorStore {
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(private readonly root: string, private readonly addresses: () => string[], private readonly caCert: string, private readonly authorization: string) {}

  /** The directory of operator `hash`, fetching and unpacking it first if needed. */
  ensure(hash: string): Promise<string> {
    let p = this.inflight.get(hash);
    if (!p) {
      p = this.fetchAndUnpack(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, p);
    }
    return p;
  }

  private async fetchAndUnpack(hash: string): Promise<string> {
    const dir = join(this.root, hash);
    if (await stat(join(dir, "operator.yaml")).then(() => true, () => false)) return dir;
    const bundle = await this.fetch(hash);
    if (bundleHash(bundle) !== hash) throw new StewardError("internal", `operator ${hash} arrived with different content (hash ${bundleHash(bundle)}); refusing to run it`);
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    for (const f of bundle.files) {
      const path = join(tmp, f.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, Buffer.from(f.content, "base64"), { mode: f.mode & 0o777 });
    }
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
    return dir;
  }

  private async fetch(hash: string): Promise<Bundle> {
    let lastErr: unknown;
    for (const address of this.addresses()) {
      try {
        return await new Promise<Bundle>((resolve, reject) => {
          const [host, port] = splitAddress(address);
          const req = request({ host, port, path: `/v1/operators/${hash}`, method: "GET", ca: this.caCert, servername: CONTROLLER_TLS_NAME, headers: { authorization: `Agent ${this.authorization}` }, timeout: 60_000 }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => {
              const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as unknown;
              if ((res.statusCode ?? 500) >= 400) reject(errorFromWire(body, res.statusCode ?? 500));
              else resolve(body as Bundle);
            });
            res.on("error", reject);
          });
          req.on("timeout", () => req.destroy(new Error("operator download timed out")));
          req.on("error", reject);
          req.end();
        });
      } catch (err) {
        lastErr = err;
        if (StewardError.isInstance(err) && err.code === "not-found") throw err;
      }
    }
    throw new StewardError("unavailable", `could not download operator ${hash}: ${(lastErr as Error)?.message}`, { cause: lastErr });
  }
}
