/**
 * The agent's side of a workload container's supervisor: one request per connection over its unix
 * socket (protocol.ts), with a deadline, and the answer's size bounded.
 */
import { connect } from "node:net";
import type { SupervisorRequest, SupervisorResponse } from "./protocol";
import { MAX_RESPONSE_BYTES } from "./protocol";

export class SupervisorError extends Error {
  /** `unreachable`: no supervisor answered; the others are the supervisor's refusals (protocol.ts). */
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class SupervisorClient {
  constructor(
    readonly socketPath: string,
    readonly container: string,
  ) {}

  call<T>(req: SupervisorRequest, timeoutMs = 30_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const sock = connect(this.socketPath);
      const chunks: Buffer[] = [];
      let size = 0,
        settled = false;
      const finish = (err: Error | undefined, value?: T): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        sock.destroy();
        if (err) reject(err);
        else resolve(value as T);
      };
      const timer = setTimeout(
        () =>
          finish(
            new SupervisorError(
              "unreachable",
              `the supervisor of container ${this.container} did not answer within ${Math.round(timeoutMs / 1000)} s`,
            ),
          ),
        timeoutMs,
      );
      sock.on("connect", () => sock.write(JSON.stringify(req) + "\n"));
      sock.on("error", (err: NodeJS.ErrnoException) =>
        finish(
          new SupervisorError(
            "unreachable",
            `cannot reach the supervisor of container ${this.container} at ${this.socketPath}: ${err.code === "ENOENT" || err.code === "ECONNREFUSED" ? "it is not running (is the container up?)" : err.message}`,
          ),
        ),
      );
      sock.on("data", (d: Buffer) => {
        size += d.length;
        if (size > MAX_RESPONSE_BYTES)
          return finish(
            new SupervisorError(
              "too-large",
              `the supervisor of container ${this.container} sent more than ${MAX_RESPONSE_BYTES} bytes`,
            ),
          );
        chunks.push(d);
        if (d.indexOf(0x0a) < 0) return;
        const text = Buffer.concat(chunks).toString("utf8");
        const nl = text.indexOf("\n");
        if (nl < 0) return;
        let res: SupervisorResponse<T>;
        try {
          res = JSON.parse(text.slice(0, nl)) as SupervisorResponse<T>;
        } catch {
          return finish(
            new SupervisorError("failed", `the supervisor of container ${this.container} sent an unreadable answer`),
          );
        }
        if (res.ok) finish(undefined, res.result);
        else finish(new SupervisorError(res.error?.code ?? "failed", res.error?.message ?? "the supervisor refused"));
      });
      sock.on("end", () =>
        finish(
          new SupervisorError(
            "unreachable",
            `the supervisor of container ${this.container} closed the connection without answering`,
          ),
        ),
      );
    });
  }
}
