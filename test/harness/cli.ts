/** Runs the `steward` CLI in-process with captured output and its own STEWARD_HOME. */
import { PassThrough, Readable } from "node:stream";
import { runCli, saveClientConfig } from "../../cli";
import type { TestController } from "./controller";
import { adminConnection } from "./controller";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `input`, if given, is what every command run by this runner reads on standard input. */
export function cliRunner(home: string, cwd: string, input?: string): (...args: string[]) => Promise<CliResult> {
  return async (...args) => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = "",
      err = "";
    stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const code = await runCli(args, {
      stdin: Readable.from(input === undefined ? [] : [input]) as never,
      stdout,
      stderr,
      env: { ...withoutSteward(process.env), STEWARD_HOME: home },
      cwd,
    });
    return { code, stdout: out, stderr: err };
  };
}

/**
 * The CLI with its home at `home` (and working there) knowing each of `controllers` by its name, as its
 * admin; the first is the current one, with `currentModel` if given.
 */
export async function cliOnControllers(
  home: string,
  controllers: Record<string, TestController>,
  opts: { currentModel?: string } = {},
): Promise<ReturnType<typeof cliRunner>> {
  const names = Object.keys(controllers);
  await saveClientConfig(home, {
    current: names[0]!,
    controllers: Object.fromEntries(
      names.map((name, i) => [
        name,
        {
          ...adminConnection(controllers[name]!),
          ...(i === 0 && opts.currentModel ? { currentModel: opts.currentModel } : {}),
        },
      ]),
    ),
  });
  return cliRunner(home, home);
}

function withoutSteward(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("STEWARD_")));
}

/** `steward bootstrap NAME` on a random high port, trying another when one is taken (tests run side by side). */
export async function bootstrapOnFreePort(
  steward: (...args: string[]) => Promise<CliResult>,
  name: string,
): Promise<CliResult> {
  let r: CliResult | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    r = await steward("bootstrap", name, "--port", String(20000 + Math.floor(Math.random() * 20000)));
    if (r.code === 0 || !/is in use; choose another/.test(r.stderr + r.stdout)) return r;
  }
  return r!;
}
