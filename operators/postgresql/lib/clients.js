// The database endpoint (postgresql-client): a client application asks for a database by name in
// its application data; the leader makes the database and a user for that relation (relation_<id>),
// puts username and password in an application-owned secret granted over the relation, and
// publishes secret-user, endpoints (the primary), read-only-endpoints (the standbys) and database.
// Every reconcile on the leader publishes again, so a failover moves the clients to the new primary.
"use strict";
const t = require("./tools");
const { lit, ident } = require("./pg");
const { newPassword, scramVerifier } = require("./passwords");
const { tlsState } = require("./tls");

/** Serves every client relation; returns the leader data to set (secret uris per relation). */
function serveClients(ctx, all) {
  const { pg, ld } = ctx;
  const patch = {};
  const endpoints = `${ctx.address}:${ctx.port}`;
  const readOnly = all
    .filter((x) => x.state === "standby" && x.host)
    .map((x) => `${x.host}:${x.port}`)
    .sort()
    .join(",");
  // tls "true" when the server takes TLS, and its CA (a certificate: not secret) to verify it by.
  const tlsNow = tlsState(ctx.p);
  const tlsData = { tls: String(tlsNow.on), "tls-ca": tlsNow.on && tlsNow.ca ? tlsNow.ca : "" };
  require("./client-cleanup").dropBrokenClients(ctx);
  for (const rel of t.relationIds("database")) {
    const id = rel.split(":")[1];
    const database = t.relationGet(rel, undefined, true).database;
    if (!database) continue;
    const key = `client-secret-${id}`;
    const user = `relation_${id}`;
    let uri = ld[key];
    let values = uri ? t.secretGet(uri) : undefined;
    const fresh = !values;
    if (fresh) {
      values = { username: user, password: newPassword() };
      uri = t.secretAdd(`database-${id}`, values);
      t.secretGrant(uri, rel);
      patch[key] = uri;
    }
    ensureRole(pg, user, values.password, fresh);
    ensureDatabase(pg, database, user);
    const want = { "secret-user": uri, endpoints, "read-only-endpoints": readOnly, database, ...tlsData };
    const cur = t.relationGet(rel, process.env.STEWARD_APPLICATION_NAME, true);
    if (Object.entries(want).some(([k, v]) => (cur[k] ?? "") !== v)) t.relationSet(rel, want, true);
  }
  return patch;
}

/** The relation's user; its password set when the secret is new (a write only then: hooks stay read-only). */
function ensureRole(pg, user, password, fresh) {
  const exists = pg.value(`SELECT 1 FROM pg_roles WHERE rolname = ${lit(user)}`) === "1";
  if (exists && !fresh) return;
  // Its SCRAM verifier goes on psql's standard input: the password itself never reaches the server.
  pg.sql(`${exists ? "ALTER" : "CREATE"} ROLE ${ident(user)} LOGIN PASSWORD ${lit(scramVerifier(password))}`);
}

function ensureDatabase(pg, database, user) {
  if (pg.value(`SELECT 1 FROM pg_database WHERE datname = ${lit(database)}`) !== "1")
    pg.sql(`CREATE DATABASE ${ident(database)} OWNER ${ident(user)}`);
}

module.exports = { serveClients };
