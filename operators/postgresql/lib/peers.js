// The peer relation (replicas): each unit publishes where its server listens and what it is
// (primary, standby, cloning); the leader reads it to pick synchronous standbys, create slots and
// list read-only endpoints, and a new leader to find the standbys whose positions it must check.
"use strict";
const t = require("./tools");

const peerRelation = () => t.relationIds("replicas")[0];

/** The other units in the peer relation with what they published: {unit, host, port, state}. */
function peers() {
  const rel = peerRelation();
  if (!rel) return [];
  return t.relationUnits(rel).map((unit) => {
    const d = t.relationGet(rel, unit);
    return { unit, host: d.address, port: Number(d.port || 0), state: d.state ?? "" };
  });
}

/** Publishes this unit's address, port and role (committed when the hook ends). */
function publishSelf(address, port, state) {
  const rel = peerRelation();
  if (!rel) return;
  const cur = t.relationGet(rel, process.env.STEWARD_UNIT_NAME);
  const want = { address, port: String(port), state };
  if (Object.entries(want).some(([k, v]) => cur[k] !== v)) t.relationSet(rel, want);
}

module.exports = { peers, publishSelf, peerRelation };
