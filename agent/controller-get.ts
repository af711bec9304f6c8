/**
 * A GET of a JSON document from the controller with the agent's credential, trying each known
 * address in turn: what the agent downloads outside its WebSocket (operator bundles, agent releases).
 */
import { request } from "node:https";
import {
  CONTROLLER_TLS_NAME,
  STEWARD_VERSION,
  StewardError,
  VERSION_HEADER,
  errorFromWire,
  splitAddress,
} from "../api/core";

export interface ControllerGet {
  addresses: string[];
  caCert: string;
  /** `model/machine/credential`, sent as `Agent …`. */
  authorization: string;
  path: string;
  /** Names the download in the error that says it failed ("operator sha256:…"). */
  what: string;
  /** The reason of that error (api/error-reasons.ts). */
  reason: "operator-download-failed" | "agent-release-download-failed";
}

/** The answer of the first address that gives one; a `not-found` ends the search (every replica holds the same). */
export async function getFromController<T>(o: ControllerGet): Promise<T> {
  let lastErr: unknown;
  for (const address of o.addresses) {
    try {
      return await getOnce<T>(address, o);
    } catch (err) {
      lastErr = err;
      if (StewardError.isInstance(err) && err.code === "not-found") throw err;
    }
  }
  throw new StewardError("unavailable", `could not download ${o.what}: ${(lastErr as Error)?.message}`, {
    cause: lastErr,
    reason: o.reason,
  });
}

function getOnce<T>(address: string, o: ControllerGet): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const [host, port] = splitAddress(address);
    const req = request(
      {
        host,
        port,
        path: o.path,
        method: "GET",
        ca: o.caCert,
        servername: CONTROLLER_TLS_NAME,
        headers: { authorization: `Agent ${o.authorization}`, [VERSION_HEADER]: STEWARD_VERSION },
        timeout: 60_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as unknown;
            if ((res.statusCode ?? 500) >= 400) reject(errorFromWire(body, res.statusCode ?? 500));
            else resolve(body as T);
          } catch (err) {
            reject(err as Error);
          }
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`the download of ${o.what} timed out`)));
    req.on("error", reject);
    req.end();
  });
}
