/**
 * The controller's leader election against a real three-member etcd on loopback: a campaign that
 * starts while etcd has no leader (two members frozen) takes leadership soon after etcd elects one
 * again, not at the next slow retry.
 */
import test from "ava";
import { randomBytes } from "node:crypto";
import type { StewardError } from "../api";
import { silentLogger } from "../api";
import { EtcdStore, LeaderElection } from "../controller";
import type { TestEtcdMember } from "./harness/etcd";
import { haveEtcd, startEtcdCluster } from "./harness/etcd";
import { eventually } from "./harness/eventually";

/** An election of replica r0 on a store of its own at `member`, counting how often it was elected. */
async function electionOn(
  member: TestEtcdMember,
  ttlSeconds: number,
): Promise<{ store: EtcdStore; election: LeaderElection; elected: { n: number } }> {
  const store = await EtcdStore.connect({
    endpoints: [member.endpoint],
    prefix: `/le-${randomBytes(3).toString("hex")}`,
  });
  const elected = { n: 0 };
  const election = new LeaderElection({
    store,
    replicaId: "r0",
    addresses: () => [],
    log: silentLogger,
    ttlSeconds,
    onElected: () => {
      elected.n++;
    },
  });
  return { store, election, elected };
}

(haveEtcd ? test.serial : test.skip)(
  "a campaign begun while etcd has no leader succeeds once etcd elects one again",
  async (t) => {
    const members: TestEtcdMember[] = await startEtcdCluster(3);
    const [m0, m1, m2] = members as [TestEtcdMember, TestEtcdMember, TestEtcdMember];
    // A long TTL: its retry timer (one TTL) cannot be what elects us within the wait below.
    const { store, election, elected } = await electionOn(m0, 60);
    try {
      m1.freeze();
      m2.freeze();
      // m0 alone has no quorum: it loses its leader after one election timeout (500 ms here).
      await eventually(
        "m0 without a leader",
        async () =>
          (await fetch(`${m0.endpoint}/health`).then(
            (r) => r.ok,
            () => false,
          ))
            ? undefined
            : true,
        10_000,
        100,
      );
      election.start();
      await new Promise((r) => setTimeout(r, 6000)); // longer than the store's 5 s deadline
      t.is(elected.n, 0, "nobody can lead while etcd has no leader");
      m1.thaw();
      m2.thaw();
      // The old code's first attempt hung for the store's 5 s deadline and the next waited for the
      // 60 s retry timer; attempts that give up quickly and repeat elect within a few seconds.
      await eventually(
        "elected after etcd has a leader again",
        async () => (election.isLeader ? true : undefined),
        15_000,
        100,
      );
      t.is(elected.n, 1);
      const kv = await store.get("/cluster/leader");
      t.is((JSON.parse(kv!.value) as { replica: string }).replica, "r0");
    } finally {
      await election.stop();
      await store.close();
      await Promise.all(members.map((m) => m.stop()));
    }
  },
);

(haveEtcd ? test.serial : test.skip)(
  "a term's fenced writes fail once it ends, even when the same replica is elected again at once",
  async (t) => {
    const [member] = (await startEtcdCluster(1)) as [TestEtcdMember];
    const { store, election, elected } = await electionOn(member, 1);
    try {
      election.start();
      await eventually("elected", async () => (election.isLeader ? true : undefined), 15_000, 50);
      const firstTerm = election.fenced();
      await firstTerm.put("/work", "first term");
      // The term's lease lapses (as when renewals stall under load): the next renewal deposes, and
      // the key, gone with the lease, is won again by the same replica.
      const claim = await store.get("/cluster/leader");
      await store.revokeLease(claim!.lease!);
      await eventually(
        "elected again",
        async () => (elected.n === 2 && election.isLeader ? true : undefined),
        15_000,
        50,
      );
      const late = await firstTerm.put("/work", "the first term, late").then(
        () => undefined,
        (err: StewardError) => err,
      );
      t.is(late?.reason, "not-leader", "the ended term's write is refused");
      await election.fenced().put("/work", "second term");
      t.is((await store.get("/work"))?.value, "second term");
    } finally {
      await election.stop();
      await store.close();
      await member.stop();
    }
  },
);
