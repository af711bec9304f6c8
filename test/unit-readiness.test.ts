/** When a unit is ready (agent/readiness.ts): the operator's word in this boot, else an active workload once started. */
import test from "ava";
import type { UnitLocalState } from "../agent";
import { initialUnitState, unitReadiness } from "../agent";

const started = (over: Partial<UnitLocalState> = {}): UnitLocalState => ({
  ...initialUnitState(),
  installed: true,
  started: true,
  bootId: "boot-1",
  ...over,
});

test("never said: ready once started in this boot with an active workload and no failing hook", (t) => {
  t.deepEqual(
    unitReadiness("db/0", started({ statusSet: true, workload: { status: "active", message: "" } }), "boot-1"),
    { ready: true, reason: "", source: "workload" },
  );
  t.regex(
    unitReadiness("db/0", started({ statusSet: true, workload: { status: "waiting", message: "for peers" } }), "boot-1")
      .reason,
    /^db\/0's workload status is waiting \(for peers\): ready when it is active/,
  );
  t.regex(unitReadiness("db/0", started(), "boot-1").reason, /unknown \(its operator never set one\)/);
  t.regex(
    unitReadiness("db/0", { ...initialUnitState(), installed: true }, "boot-1").reason,
    /^db\/0 has not run its start hook yet$/,
  );
  const rebooted = started({ statusSet: true, workload: { status: "active", message: "" } });
  t.deepEqual(unitReadiness("db/0", rebooted, "boot-2"), {
    ready: false,
    reason: "db/0 has not run its start hook since this pod started",
    source: "workload",
  });
  t.regex(
    unitReadiness(
      "db/0",
      started({
        statusSet: true,
        workload: { status: "active", message: "" },
        failedHook: { kind: "update-status", name: "update-status" },
      }),
      "boot-1",
    ).reason,
    /^db\/0 is in error: its update-status hook failed$/,
  );
});

test("the operator's word wins in the boot it was said in, and no longer in the next", (t) => {
  const active = { statusSet: true, workload: { status: "active", message: "" } };
  t.deepEqual(
    unitReadiness(
      "db/0",
      started({ ...active, readiness: { ready: false, message: "rejoining", bootId: "boot-1" } }),
      "boot-1",
    ),
    { ready: false, reason: "db/0 is not ready: rejoining", source: "operator" },
  );
  t.is(
    unitReadiness("db/0", started({ ...active, readiness: { ready: false, message: "", bootId: "boot-1" } }), "boot-1")
      .reason,
    "db/0 is not ready (its operator said so)",
  );
  t.true(
    unitReadiness(
      "db/0",
      started({
        statusSet: true,
        workload: { status: "maintenance", message: "" },
        readiness: { ready: true, message: "", bootId: "boot-1" },
      }),
      "boot-1",
    ).ready,
  );
  // Said in an earlier boot (the pod was recreated): the workload decides again, once started.
  t.deepEqual(
    unitReadiness(
      "db/0",
      started({ ...active, bootId: "boot-1", readiness: { ready: true, message: "", bootId: "boot-1" } }),
      "boot-2",
    ).source,
    "workload",
  );
  t.false(
    unitReadiness(
      "db/0",
      started({ ...active, bootId: "boot-1", readiness: { ready: true, message: "", bootId: "boot-1" } }),
      "boot-2",
    ).ready,
  );
  t.regex(
    unitReadiness(
      "db/0",
      started({ ...active, stopped: true, readiness: { ready: true, message: "", bootId: "boot-1" } }),
      "boot-1",
    ).reason,
    /^db\/0 is stopped$/,
  );
});

test("a state file from before readiness existed reads as never said", (t) => {
  const old = JSON.parse(
    JSON.stringify(started({ statusSet: true, workload: { status: "active", message: "" } })),
  ) as UnitLocalState;
  delete old.readiness;
  t.deepEqual(unitReadiness("db/0", old, "boot-1"), { ready: true, reason: "", source: "workload" });
});
