#!/usr/bin/env node
/** The agent process: `node dist/agent/main.js --dir DIR`. */
import { createLogger } from "../api/core";
import { Agent } from "./agent";

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const i = args.indexOf("--dir");
  const dir = i >= 0 ? args[i + 1] : process.env.STEWARD_AGENT_DIR;
  if (!dir) {
    process.stderr.write("usage: agent/main.js --dir DIR\n");
    process.exitCode = 1;
    return;
  }
  const log = createLogger({ fields: { component: "agent" } });
  const agent = await Agent.start({ dir, log });
  let stopping = false;
  for (const s of ["SIGINT", "SIGTERM"] as const) {
    process.on(s, () => {
      if (stopping) return;
      stopping = true;
      agent.stop().then(() => process.exit(0), () => process.exit(1));
    });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`agent failed to start: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
