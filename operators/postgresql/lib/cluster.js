// The one reconcile every hook runs: from what the unit is (leader or not), the leader data and the
// peers, make the local server what it should be. The leader is the primary (bootstrapping the
// cluster, or promoting itself after a failover: failover.js); every other unit is a standby of the
// primary named in leader data (cloning, following a new primary, or rejoining after it was
// primary: follower.js). A unit that is not the leader never runs as a primary.
"use strict";
const { existsSync } = require("node:fs");
const { join } = require("node:path");
const t = require("./tools");
const { BIN, unitPaths, pgName } = require("./paths");
const { Pg } = require("./pg");
const { ownedDir } = require("./conf");
const { podWorkload, ContainerPg, prepareDirsIn, existsIn, CONTAINER } = require("./workload");

/** What every part of a hook needs to know, read once. */
function hookContext() {
  const config = t.config();
  const p = unitPaths();
  const unit = process.env.STEWARD_UNIT_NAME;
  return {
    unit,
    appName: pgName(unit),
    address: process.env.STEWARD_UNIT_ADDRESS,
    port: Number(config.port),
    config,
    p,
    // On a Kubernetes pod the server runs in the postgresql workload container (workload.js).
    pg: p ? new (podWorkload() ? ContainerPg : Pg)(p, Number(config.port)) : undefined,
    leader: t.isLeader(),
    ld: t.leaderGet(),
  };
}

/** The storage location and its directories, postgres's (0700). */
function prepareDirs(p) {
  if (podWorkload()) return prepareDirsIn(p);
  for (const d of [p.base, p.run, p.backups]) ownedDir(d);
}

function reconcile() {
  const pod = podWorkload();
  if (pod && !pod.ready) {
    t.status("waiting", `waiting for the ${CONTAINER} container's supervisor`);
    return;
  }
  if (pod ? !existsIn(join(BIN, "postgres")) : !existsSync(join(BIN, "postgres"))) {
    t.status(
      "blocked",
      pod
        ? `the ${CONTAINER} container's image has no PostgreSQL 15 (${BIN}): use a postgres:15 image (operator.yaml containers:)`
        : `PostgreSQL 15 is not installed (${BIN}); the install hook installs postgresql-15`,
    );
    return;
  }
  const ctx = hookContext();
  if (!ctx.p) {
    t.status("waiting", "waiting for the pgdata storage");
    return;
  }
  prepareDirs(ctx.p);
  require("./watchdog").ensureWatchdog(ctx.p);
  const tls = require("./tls").ensureTls(ctx.p, ctx.config);
  if (ctx.leader) require("./primary").reconcilePrimary(ctx);
  else require("./follower").reconcileFollower(ctx);
  require("./rolling").rollingRestart(ctx);
  // After the role's own status: a tls secret that cannot be used is what the user must fix.
  if (tls.problem) t.status("blocked", tls.problem);
}

module.exports = { reconcile, hookContext, prepareDirs };
