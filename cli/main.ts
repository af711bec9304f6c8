#!/usr/bin/env node
import { runCli } from "./cli";

// Itself as the script the console runs commands with: right in the build and in the bundle alike.
runCli(process.argv.slice(2), {}, { cliMain: __filename }).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => { process.stderr.write(`steward: ${(err as Error).stack ?? String(err)}\n`); process.exitCode = 1; },
);
