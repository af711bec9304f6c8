// The cluster's own passwords (operator: superuser; replication) live in one application-owned
// secret that the first leader creates; its uri is in leader data, and every unit of the
// application reads it (an application's units read its secrets). They never reach argv or a log.
"use strict";
const { randomBytes } = require("node:crypto");
const t = require("./tools");

const LABEL = "cluster-passwords";
const newPassword = () => randomBytes(24).toString("base64url");

/** The leader's: the secret's values, made (and its uri returned for leader data) when there is none. */
function ensurePasswords(leaderData) {
  const uri = leaderData["passwords"];
  if (uri) {
    const v = t.secretGet(uri);
    if (v) return { uri, passwords: toPasswords(v), created: false };
  }
  const values = { "operator-password": newPassword(), "replication-password": newPassword() };
  const made = t.secretAdd(LABEL, values);
  return { uri: made, passwords: toPasswords(values), created: true };
}

/**
 * A follower's read, waiting a little: leader data is written at once, the secret when the leader's
 * hook commits, so a follower can see the uri a moment before the secret is readable.
 */
function readPasswords(leaderData, waitMs = 30_000) {
  const uri = leaderData["passwords"];
  if (!uri) return undefined;
  const until = Date.now() + waitMs;
  for (;;) {
    const v = t.secretGet(uri, { refresh: true });
    if (v) return toPasswords(v);
    if (Date.now() > until) return undefined;
    execSleep(1000);
  }
}

const toPasswords = (v) => ({ operator: v["operator-password"], replication: v["replication-password"] });

function execSleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

module.exports = { ensurePasswords, readPasswords, newPassword, sleep: execSleep };
