// Where a unit keeps what is its own: everything PostgreSQL writes lives under the unit's pgdata
// storage (data directory, socket directory, server log, backups, the passfile the server and its
// tools read), so nothing is shared with another unit on a host whose /etc or /var/run it shares.
"use strict";
const { join } = require("node:path");
const { storageLocation } = require("./tools");

const BIN = "/usr/lib/postgresql/15/bin";

/** The unit's paths, from its pgdata storage (undefined until the storage is attached). */
function unitPaths() {
  const base = storageLocation("pgdata");
  if (!base) return undefined;
  return {
    base,
    data: join(base, "data"),
    run: join(base, "run"),
    log: join(base, "postgresql.log"),
    backups: join(base, "backups"),
    /** Passwords of operator and replication for libpq (0600, postgres's): server, pg_rewind, hooks. */
    pgpass: join(base, "pgpass"),
  };
}

/** A unit name as PostgreSQL identifiers want it (slot names: [a-z0-9_]): postgresql/1 -> postgresql_1. */
const pgName = (unit) => unit.replace(/[^a-z0-9]/g, "_");

module.exports = { BIN, unitPaths, pgName };
