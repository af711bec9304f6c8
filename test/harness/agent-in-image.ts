/**
 * An agent entry for the local substrate (`Controller.start({agentEntry})`) that runs the agent of a
 * built agent image instead: `node agent-in-image.js --dir DIR` makes a buildah container of
 * STEWARD_TEST_AGENT_IMAGE and runs the image's Node and agent bundle in it (chroot isolation, so the
 * host's network and the controller on loopback), DIR bind-mounted at the same path and given to the
 * image's user. Global buildah options (the test's own store) come in STEWARD_TEST_BUILDAH_ARGS. A
 * stand-in for a pod's agent container: same image, user and entrypoint, not the pod's arguments.
 */
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";

const args = process.argv.slice(2);
const dir = args[args.indexOf("--dir") + 1]!;
const image = process.env.STEWARD_TEST_AGENT_IMAGE!;
const buildah = (process.env.STEWARD_TEST_BUILDAH_ARGS ?? "").split(" ").filter(Boolean);
const name = `steward-agent-${createHash("sha256").update(dir).digest("hex").slice(0, 12)}`;
const quiet = { stdio: "ignore" as const };

execFileSync("chown", ["-R", "10001:10001", dir]);
try {
  execFileSync("buildah", [...buildah, "rm", name], quiet);
} catch {
  /* none yet */
}
execFileSync("buildah", [...buildah, "from", "--name", name, image], quiet);
const child = spawn(
  "buildah",
  [
    ...buildah,
    "run",
    "-v",
    `${dir}:${dir}`,
    name,
    "--",
    "/usr/local/bin/node",
    "--max-semi-space-size=1",
    "/opt/steward/agent-bundle/main.js",
    "--dir",
    dir,
  ],
  {
    stdio: "inherit",
    env: { ...process.env, BUILDAH_ISOLATION: "chroot" },
  },
);
for (const s of ["SIGTERM", "SIGINT"] as const) process.on(s, () => child.kill(s));
child.on("exit", (code) => {
  try {
    execFileSync("buildah", [...buildah, "rm", name], quiet);
  } catch {
    /* gone */
  }
  process.exit(code ?? 1);
});
