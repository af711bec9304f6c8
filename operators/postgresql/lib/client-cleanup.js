// A client's database relation removed: the leader drops what it made for that relation and nothing
// else. What it made is known from leader data (client-secret-<id>, set when it made the user
// relation_<id> and its secret) and from ownership (the databases relation_<id> owns are the ones
// created for it: a database that existed before keeps its owner). Its sessions are ended first, then
// its databases and its user are dropped and its secret removed (which revokes every grant of it).
// This runs in every leader reconcile, not only in relation-broken: a relation broken while another
// unit led, or while the server was down, is cleaned up by the next leader hook that can.
"use strict";
const t = require("./tools");
const { lit, ident } = require("./pg");

const KEY = /^client-secret-(\d+)$/;

function dropBrokenClients(ctx) {
  const { pg, ld } = ctx;
  const alive = new Set(t.relationIds("database").map((rel) => rel.split(":")[1]));
  for (const [key, uri] of Object.entries(ld)) {
    const id = KEY.exec(key)?.[1];
    if (!id || !uri || alive.has(id)) continue;
    const user = `relation_${id}`;
    const owned = pg
      .sql(`SELECT datname FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE r.rolname = ${lit(user)}`)
      .map((r) => r[0]);
    // No new sessions of the user, then none left: DROP DATABASE refuses while anyone is connected.
    if (pg.value(`SELECT 1 FROM pg_roles WHERE rolname = ${lit(user)}`) === "1") {
      pg.sql(`ALTER ROLE ${ident(user)} NOLOGIN`);
      pg.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ${lit(user)}`);
    }
    for (const db of owned) pg.sql(`DROP DATABASE IF EXISTS ${ident(db)} WITH (FORCE)`);
    pg.sql(`DROP ROLE IF EXISTS ${ident(user)}`);
    // Removing the secret ends its grants too (the relation's grant has ended with the relation).
    t.tryTool("secret-remove", [uri]);
    t.leaderSet({ [key]: "" });
    t.log(`dropped the user ${user} and its database(s) ${owned.join(", ") || "(none)"}: relation ${id} is gone`);
  }
}

module.exports = { dropBrokenClients };
