/** Raw HTTPS requests to a test controller, for what the typed client never sends (bad JSON, no auth). */
import type { Agent } from "node:https";
import { request } from "node:https";
import { CONTROLLER_TLS_NAME, splitAddress } from "../../api";

export function rawRequest(
  address: string,
  caCert: string,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
  agent?: Agent,
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { code?: string; message?: string; details?: Record<string, unknown> } & Record<string, unknown>;
}> {
  const [host, port] = splitAddress(address);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        method,
        path,
        ca: caCert,
        servername: CONTROLLER_TLS_NAME,
        ...(agent ? { agent } : {}),
        headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? (JSON.parse(text) as never) : ({} as never),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
