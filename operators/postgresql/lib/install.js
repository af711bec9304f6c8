// The install hook: PostgreSQL 15 from the distribution when it is not there (Debian's
// postgresql-15), without the "main" cluster Debian's postgresql-common would create and start on
// port 5432: every unit's server is the operator's, on its own storage.
"use strict";
const { execFileSync } = require("node:child_process");
const { existsSync, mkdirSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const t = require("./tools");
const { BIN } = require("./paths");

function install() {
  if (require("./workload").podWorkload()) {
    // On Kubernetes the postgresql container's image brings PostgreSQL: nothing to install here.
    t.status("maintenance", "waiting for the postgresql container");
    return;
  }
  if (!existsSync(join(BIN, "postgres"))) {
    t.status("maintenance", "installing postgresql-15");
    mkdirSync("/etc/postgresql-common", { recursive: true });
    const cc = "/etc/postgresql-common/createcluster.conf";
    if (!existsSync(cc)) writeFileSync(cc, "create_main_cluster = false\n");
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    execFileSync("apt-get", ["update", "-qq"], { env, stdio: "ignore" });
    execFileSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "postgresql-15"], {
      env,
      stdio: "ignore",
    });
  }
  const version = execFileSync(join(BIN, "postgres"), ["--version"], { encoding: "utf8" }).trim().split(" ").pop();
  t.tool("application-version-set", [version]);
  t.status("maintenance", "installed PostgreSQL " + version);
}

module.exports = { install };
