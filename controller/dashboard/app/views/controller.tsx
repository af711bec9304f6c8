/**
 * The controller: its replicas (and the version each runs), the store's format (and its migration across a minor
 * version), the etcd voters and leader, spare hosts or the replica cloud, the quorum keeper's history, and the last
 * in-place upgrade. Users other than superusers are sent only the
 * overview (name, version, addresses, CA fingerprint): the cluster's layout is not theirs to see.
 */
import type { ControllerOverview } from "../../../../api/browser";
import { showsCluster, storeFormatLine } from "../../../../api/browser";
import { Ago, Badge, Empty, Section } from "../ui";

export function ControllerView({ info }: { info: ControllerOverview | undefined }) {
  if (!info) return <p class="loading">Loading the controller…</p>;
  if (!showsCluster(info)) {
    return (
      <div class="stack">
        <div class="page-head">
          <h1>Controller {info.name}</h1>
          <p class="muted">
            version {info.version} · {info.addresses.join(", ")}
          </p>
          <Available versions={info.available} />
        </div>
        <Section title="Certificate authority">
          <p>
            SHA-256 fingerprint <code data-ca-fingerprint>{info.caFingerprint}</code>
          </p>
          <p class="muted">
            The replicas, the store's members and the quorum keeper are shown to controller superusers.
          </p>
        </Section>
      </div>
    );
  }
  const c = info.cluster;
  const voters = c.members.filter((m) => m.hasVote).length;
  return (
    <div class="stack">
      <div class="page-head">
        <h1>
          Controller {info.name}{" "}
          <Badge
            status={c.quorum ? "active" : "error"}
            title={c.quorum ? "the store has a majority" : "no quorum: reads only"}
          />
        </h1>
        <p class="muted">
          version {info.version} · store {c.store} · {voters} of {c.wantsVote} voters
          {c.raftTerm !== undefined ? ` · raft term ${c.raftTerm}` : ""} · {info.addresses.join(", ")}
        </p>
        {c.degraded ? <p class="error-note">{c.degraded}</p> : null}
        {info.store ? <p data-store-format>{storeFormatLine(info.store)}</p> : null}
        <Available versions={info.available} />
      </div>
      <Section title="Replicas">
        <table class="grid">
          <thead>
            <tr>
              <th>Replica</th>
              <th>Addresses</th>
              <th>Version</th>
              <th>Role</th>
              <th>Up since</th>
            </tr>
          </thead>
          <tbody>
            {info.replicas.map((r) => (
              <tr key={r.id} data-replica={r.id}>
                <td>{r.id}</td>
                <td>
                  <code>{r.addresses.join(" ")}</code>
                </td>
                <td>{r.version ?? "—"}</td>
                <td>{r.leader ? <span class="leader">★ leader</span> : "follower"}</td>
                <td>
                  <Ago at={r.since} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {c.store === "etcd" ? (
        <Section title="etcd members">
          <table class="grid">
            <thead>
              <tr>
                <th>Member</th>
                <th>Host</th>
                <th>State</th>
                <th>Vote</th>
                <th>Present</th>
                <th>Steward leader</th>
                <th>etcd leader</th>
                <th>Note</th>
              </tr>
            </thead>
            <tbody>
              {c.members.map((m) => (
                <tr key={m.name} data-member={m.name}>
                  <td>{m.name}</td>
                  <td>
                    <code>{m.host}</code>
                    {m.instance ? <span class="muted"> {m.instance.id}</span> : null}
                  </td>
                  <td>
                    <Badge status={m.state === "active" || m.state === "voter" ? "active" : m.state} />
                  </td>
                  <td>{m.hasVote ? "voter" : m.learner ? "learner" : "—"}</td>
                  <td>
                    <Badge status={m.present ? "yes" : "down"} />
                  </td>
                  <td>{m.leader ? "★" : ""}</td>
                  <td>{m.etcdLeader ? "★" : ""}</td>
                  <td class="message">{m.reason ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      ) : null}
      <div class="columns">
        <Section title="Where replacements come from">
          {c.spares.length === 0 && !c.replicaCloud ? (
            <Empty>
              No spare hosts and no replica cloud: a lost replica is not replaced. Add spares with{" "}
              <code>steward add-spare</code>.
            </Empty>
          ) : null}
          {c.spares.length ? (
            <table class="grid compact">
              <thead>
                <tr>
                  <th>Spare host</th>
                  <th>User</th>
                  <th>Note</th>
                </tr>
              </thead>
              <tbody>
                {c.spares.map((s) => (
                  <tr key={s.host}>
                    <td>
                      <code>{s.host}</code>
                    </td>
                    <td>{s.user}</td>
                    <td class="message">{s.failed ?? "ready"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {c.replicaCloud ? (
            <p>
              Cloud: <strong>{c.replicaCloud.substrate}</strong>{" "}
              {c.replicaCloud.credential ? (
                <>with credential {c.replicaCloud.credential}</>
              ) : (
                "as its pods' ServiceAccount"
              )}
              : {c.replicaCloud.summary}
            </p>
          ) : null}
          <p class="muted">
            A replica gone for {c.replaceAfterSeconds} s is replaced; at most {c.maxReplacementsPerHour} replacements an
            hour.
          </p>
        </Section>
        <Section title="Quorum keeper">
          <p>
            <Badge status={c.keeper.state === "idle" ? "idle" : "executing"} /> {c.keeper.message || "nothing to do"}
          </p>
          {c.keeper.history.length === 0 ? (
            <Empty>No replacements yet.</Empty>
          ) : (
            <ol class="timeline">
              {[...c.keeper.history].reverse().map((h, i) => (
                <li key={i}>
                  <Ago at={h.at} /> {h.message}
                </li>
              ))}
            </ol>
          )}
        </Section>
      </div>
      {c.upgrade ? (
        <Section title={`Upgrade ${c.upgrade.from} → ${c.upgrade.to}`}>
          <p>
            <Badge
              status={c.upgrade.state === "done" ? "active" : c.upgrade.state === "failed" ? "error" : "executing"}
            />{" "}
            {c.upgrade.message} · started <Ago at={c.upgrade.startedAt} />
            {c.upgrade.finishedAt ? (
              <>
                {" "}
                · finished <Ago at={c.upgrade.finishedAt} />
              </>
            ) : null}
          </p>
          <table class="grid compact">
            <thead>
              <tr>
                <th>Replica</th>
                <th>Host</th>
                <th>State</th>
                <th>Version</th>
                <th>Note</th>
              </tr>
            </thead>
            <tbody>
              {c.upgrade.replicas.map((r) => (
                <tr key={r.name}>
                  <td>{r.name}</td>
                  <td>
                    <code>{r.host}</code>
                  </td>
                  <td>{r.state}</td>
                  <td>{r.version}</td>
                  <td class="message">{r.message ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      ) : null}
    </div>
  );
}

/** Verified releases newer than the controller's own: shown, never applied on their own. */
function Available({ versions }: { versions: string[] | undefined }) {
  if (!versions?.length) return null;
  return (
    <p data-releases-available>
      {versions.join(", ")} available · <code>steward upgrade-model --to {versions[versions.length - 1]}</code>
    </p>
  );
}
