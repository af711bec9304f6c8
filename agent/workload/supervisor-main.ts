#!/usr/bin/env node
/**
 * The supervisor process, the entrypoint of a workload container:
 * `node supervisor.js --socket PATH --container NAME [--health-port N]` (supervisor.ts). Bundled
 * alone (`dist/agent-bundle/supervisor.js`) and copied with a Node binary into the pod's shared
 * volume by the init container, so it runs in images that have no Node.
 */
import { Supervisor } from "./supervisor";

const USAGE = "usage: supervisor.js --socket PATH --container NAME [--health-port N]\n";

function option(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const socketPath = option(args, "--socket");
  const container = option(args, "--container");
  const port = option(args, "--health-port");
  if (!socketPath || !container || (port !== undefined && !/^\d{1,5}$/.test(port))) {
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  const supervisor = await Supervisor.start({
    socketPath,
    container,
    ...(port !== undefined ? { healthPort: Number(port) } : {}),
  });
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    process.on(sig, () => {
      void supervisor.stop().then(() => process.exit(0));
    });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`supervisor failed to start: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
