#!/usr/bin/env node
/**
 * The local controller's supervisor process: `supervisor-main.js --pid-file FILE [--ready-file FILE] -- PROGRAM ARGS…`.
 * Started detached by `steward bootstrap` (see substrates/local/controller-process.ts); records its pid in FILE while it
 * runs and logs to its stdout (the controller's log).
 */
import { rmSync, writeFileSync } from "node:fs";
import { Supervisor } from "./supervisor";

function main(): void {
  const args = process.argv.slice(2);
  const sep = args.indexOf("--");
  const at = args.indexOf("--pid-file");
  const pidFile = at >= 0 && at < sep ? args[at + 1] : undefined;
  if (!pidFile || sep < 0 || sep === args.length - 1) {
    process.stderr.write("usage: supervisor-main.js --pid-file FILE [--ready-file FILE] -- PROGRAM ARGS...\n");
    process.exitCode = 1;
    return;
  }
  writeFileSync(pidFile, String(process.pid));
  // The controller's log format, so `grep ERROR controller.log` finds a give-up too.
  const log = (level: "info" | "error", line: string): void => {
    process.stdout.write(`${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${line}\n`);
  };
  const readyAt = args.indexOf("--ready-file");
  const readyFile = readyAt >= 0 && readyAt < sep ? args[readyAt + 1] : undefined;
  const supervisor = new Supervisor({ command: args.slice(sep + 1), log, ...(readyFile ? { readyFile } : {}) });
  for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => supervisor.stop());
  void supervisor.run().then((code) => {
    rmSync(pidFile, { force: true });
    process.exit(code);
  });
}

main();
