#!/usr/bin/env node
import { runCli } from "./cli";

runCli(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => { process.stderr.write(`steward: ${(err as Error).stack ?? String(err)}\n`); process.exitCode = 1; },
);
