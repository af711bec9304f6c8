#!/usr/bin/env node
import { runCli } from "./cli";

// A reader that stops early (`steward status | head`) closes the pipe: that ends the command
// quietly, as it does for any Unix tool, instead of an unhandled EPIPE and a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    else throw err;
  });
}

// Itself as the script the console runs commands with: right in the build and in the bundle alike.
runCli(process.argv.slice(2), {}, { cliMain: __filename }).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`steward: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
