/**
 * The set-up every provider test file shares, in one place: the MiniEngine (the SDK's dynamic-provider
 * process, test/harness/pulumi-engine.ts) started before the file's tests and, after them, asked to
 * destroy what the stack still holds and stopped; the real test controllers a program points its Model
 * at, and the admin connection to each; and the file's own fakes (test hosts, a fake cloud) started
 * first and stopped last, so that the engine's destroy still reaches them.
 */
import type { TestFn } from "ava";
import { join } from "node:path";
import type { ControllerConnection } from "../../provider";
import type { TestController } from "./controller";
import { adminConnection, startTestController } from "./controller";
import { MiniEngine } from "./pulumi-engine";

/** The repository's root: the provider process starts there, as the engine starts it in a program's directory. */
export const repoDir = join(__dirname, "..", "..", "..");

type TestControllerOptions = NonNullable<Parameters<typeof startTestController>[0]>;

export interface ProviderBedOptions {
  /** False: nothing is started (the file skips its tests too, e.g. when not root). @default true */
  when?: boolean;
  /** Runs first: what the controllers or the stack need (test hosts, a fake cloud, a directory). */
  setUp?: () => Promise<void>;
  /** Runs once the controllers and the engine are up: what needs them (a credential stored on the controller). */
  afterStart?: () => Promise<void>;
  /** Runs last, after the engine's destroy: stops what `setUp` started (whatever of it did start). */
  tearDown?: () => Promise<void>;
  /** How many test controllers to start. @default 0, or 1 when `controller` is given */
  controllers?: number;
  /** Their options; a function when they depend on what `setUp` made (a test host's subnet). */
  controller?: TestControllerOptions | (() => TestControllerOptions);
  /** Whether the stack left after the tests is destroyed (its resources deleted through the provider). @default true */
  destroy?: boolean;
}

export interface ProviderBed {
  /** Made at once (a file may destructure it), started before the tests. */
  readonly engine: MiniEngine;
  /** The first test controller. */
  readonly controller: TestController;
  readonly controllers: readonly TestController[];
  /** What a program's Model takes to reach `tc` (the first controller by default) as its admin. */
  connection(tc?: TestController): ControllerConnection;
}

/**
 * Registers the file's before and after hooks. Ava runs a file's hooks side by side, so what must come
 * between the bed's steps goes in `setUp`, `afterStart` and `tearDown`, not in hooks of the file's own.
 */
export function providerTestBed(test: TestFn, opts: ProviderBedOptions = {}): ProviderBed {
  const engine = new MiniEngine(repoDir);
  const controllers: TestController[] = [];
  const count = opts.controllers ?? (opts.controller ? 1 : 0);
  test.before(async () => {
    if (opts.when === false) return;
    await opts.setUp?.();
    const options = typeof opts.controller === "function" ? opts.controller() : (opts.controller ?? {});
    const started = await Promise.allSettled(Array.from({ length: count }, () => startTestController(options)));
    for (const s of started) if (s.status === "fulfilled") controllers.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    await engine.start();
    await opts.afterStart?.();
  });
  test.after.always(async () => {
    if (opts.when === false) return;
    if (opts.destroy !== false) await engine.destroy().catch(() => undefined);
    engine.stop();
    for (const tc of [...controllers].reverse()) await tc.close();
    await opts.tearDown?.();
  });
  const first = (): TestController => {
    if (!controllers[0]) throw new Error("providerTestBed: no test controller was started");
    return controllers[0];
  };
  return {
    engine,
    get controller() {
      return first();
    },
    controllers,
    connection: (tc = first()) => adminConnection(tc),
  };
}
