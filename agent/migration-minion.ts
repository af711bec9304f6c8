/**
 * {@link MigrationMinion}: the agent's part in moving its model to another controller (Juju's
 * migrationminion). The controller's view says the phase; the minion answers each phase once:
 *
 * - while the migration holds the model, no hook or action starts (the agent's uniters ask
 *   {@link MigrationMinion.paused}); the one running finishes first;
 * - QUIESCE: once no hook runs, it checks that the target answers, TLS-pinned to the target's CA,
 *   as the controller it was told of, and reports;
 * - VALIDATION: it shows the target its own credential and its units, and the target says whether
 *   its staged copy agrees; "too many at once" answers (429) are waited out, not failures (Juju #12503);
 * - SUCCESS: it reports FIRST, then adopts the target's addresses and CA (the source may be gone
 *   by the time it would report after); an agent that comes back in a later phase just adopts them.
 *
 * Each check is tried again with backoff for as long as the phase lasts: the master's deadline,
 * not a count of tries, decides when waiting is over.
 */
import { request } from "node:https";
import type { ControllerHello, Logger, MigrationTarget, MigrationView } from "../api/core";
import {
  CONTROLLER_TLS_NAME,
  HANDED_OVER_PHASES,
  REPORTED_PHASES,
  StewardError,
  isUnavailable,
  splitAddress,
} from "../api/core";
import type { ControllerConnection } from "./connection";
import type { MachineLock } from "./machine-lock";

export interface MinionDeps {
  conn: ControllerConnection;
  lock: MachineLock;
  log: Logger;
  /** `model/machine/credential`, as the agent logs in. */
  authorization: string;
  /** The units on this machine, as the source's view has them. */
  units: () => string[];
  /** Adopts the target: saves its addresses and CA and redials. */
  switchTo: (target: MigrationTarget) => Promise<void>;
  /** Hooks were paused or may run again. */
  onPausedChange: (paused: boolean) => void;
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;

export class MigrationMinion {
  private paused = false;
  private current?: MigrationView;
  /** `id/phase` answered already. */
  private readonly answered = new Set<string>();
  private working?: string;
  private closed = false;

  constructor(private readonly d: MinionDeps) {}

  get isPaused(): boolean {
    return this.paused;
  }

  onView(m: MigrationView | undefined): void {
    this.current = m;
    const paused = m?.paused ?? false;
    if (paused !== this.paused) {
      this.paused = paused;
      this.d.log.info(
        paused ? "the model is migrating: hooks paused" : "hooks resumed",
        m ? { migration: m.id, phase: m.phase } : {},
      );
      this.d.onPausedChange(paused);
    }
    // Past SUCCESS too: an agent that was down when SUCCESS came must still go to the target.
    if (!m || !(REPORTED_PHASES.has(m.phase) || HANDED_OVER_PHASES.has(m.phase))) return;
    const key = `${m.id}/${m.phase}`;
    if (this.answered.has(key) || this.working === key) return;
    this.working = key;
    this.answer(m)
      .then(() => {
        this.answered.add(key);
      })
      .catch((err: unknown) =>
        this.d.log.warn("could not answer the migration", { migration: m.id, phase: m.phase, err }),
      )
      .finally(() => {
        if (this.working === key) this.working = undefined;
      });
  }

  close(): void {
    this.closed = true;
  }

  private stillIn(m: MigrationView): boolean {
    return !this.closed && this.current?.id === m.id && this.current.phase === m.phase;
  }

  private async answer(m: MigrationView): Promise<void> {
    if (m.phase === "QUIESCE") {
      // Whatever holds the lock now finishes; nothing new starts while paused.
      await this.d.lock.run(async () => undefined);
      const hello = await this.persist(m, () =>
        this.targetCall<ControllerHello>(m.target, "GET", "/v1/migrations/hello"),
      );
      if (!hello) return;
      const ok = hello.controller === m.target.controller;
      await this.report(
        m,
        ok,
        ok
          ? undefined
          : `the target at ${m.target.addresses.join(", ")} is controller ${hello.controller}, not ${m.target.controller}`,
      );
    } else if (m.phase === "VALIDATION") {
      let refusal: string | undefined;
      const done = await this.persist(m, async () => {
        try {
          await this.targetCall(
            m.target,
            "POST",
            `/v1/migrations/${m.id}/validate`,
            { units: this.d.units() },
            { authorization: `Agent ${this.d.authorization}` },
          );
        } catch (err) {
          // A refusal is an answer: the staged model does not match this machine.
          if (StewardError.isInstance(err) && (err.code === "conflict" || err.code === "unauthorized"))
            refusal = err.message;
          else throw err;
        }
        return true;
      });
      if (done) await this.report(m, refusal === undefined, refusal);
    } else if (HANDED_OVER_PHASES.has(m.phase)) {
      if (m.phase === "SUCCESS")
        await this.report(m, true).catch((err: unknown) =>
          this.d.log.warn("could not report SUCCESS; switching to the target anyway", { err }),
        );
      await this.d.switchTo(m.target);
    }
  }

  private async report(m: MigrationView, ok: boolean, reason?: string): Promise<void> {
    await this.persist(m, () =>
      this.d.conn.call("migration.report", {
        id: m.id,
        phase: m.phase,
        ok,
        ...(reason ? { reason: reason.slice(0, 1024) } : {}),
      }),
    );
  }

  /** Tries `fn` until it answers or the phase is over (then undefined), waiting what a 429 asks. */
  private async persist<T>(m: MigrationView, fn: () => Promise<T>): Promise<T | undefined> {
    let wait = RETRY_MIN_MS;
    while (this.stillIn(m)) {
      try {
        return await fn();
      } catch (err) {
        const asked = StewardError.isInstance(err) ? Number(err.details.retryAfterSeconds) : NaN;
        const pause = Number.isFinite(asked) ? asked * 1000 * (1 + Math.random() / 2) : wait * (0.5 + Math.random());
        this.d.log.debug("migration check failed; trying again", { phase: m.phase, in_ms: Math.round(pause), err });
        await new Promise((r) => setTimeout(r, pause));
        wait = Math.min(wait * 1.6, RETRY_MAX_MS);
      }
    }
    return undefined;
  }

  /** One request to the target, trying its addresses in turn; TLS pinned to the target's CA. */
  private async targetCall<T>(
    t: MigrationTarget,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    let last: unknown;
    for (const address of t.addresses) {
      try {
        return await httpsJson<T>(address, t.caCert, method, path, body, headers);
      } catch (err) {
        if (StewardError.isInstance(err) && !isUnavailable(err)) throw err;
        last = err;
      }
    }
    throw last ?? new StewardError("unavailable", "the target has no address", { reason: "host-unreachable" });
  }
}

function httpsJson<T>(
  address: string,
  caCert: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<T> {
  const [host, port] = splitAddress(address);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise<T>((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        method,
        path,
        ca: caCert,
        servername: CONTROLLER_TLS_NAME,
        timeout: 10_000,
        headers: {
          accept: "application/json",
          ...headers,
          ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          let parsed: { code?: string; message?: string; details?: Record<string, unknown> } | undefined;
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof parsed;
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 500;
          if (status < 400) {
            resolve(parsed as T);
            return;
          }
          const retryAfter = Number(res.headers["retry-after"]);
          const code =
            status === 429
              ? "rate-limited"
              : status === 409
                ? "conflict"
                : status === 401
                  ? "unauthorized"
                  : status === 404
                    ? "not-found"
                    : "unavailable";
          reject(
            new StewardError(code, `target ${address}: ${parsed?.message ?? `HTTP ${status}`}`, {
              details: Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {},
            }),
          );
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`request to ${address} timed out`)));
    req.on("error", (err) =>
      reject(
        new StewardError("unavailable", `target ${address}: ${err.message}`, {
          cause: err,
          reason: "host-unreachable",
        }),
      ),
    );
    req.end(payload);
  });
}
