/**
 * `steward leadership-lease APP [DURATION]`: shows or changes an application's leadership lease, as
 * `steward constraints` does for its constraints. A change applies at each unit's next claim or renewal.
 */
import { Command, Option, UsageError } from "clipanion";
import { LEADERSHIP_LEASE, formatLeaseSeconds, parseLeadershipLease } from "../../api/core";
import { ModelCommand } from "../base-command";

export default class LeadershipLeaseCommand extends ModelCommand {
  static override paths = [["leadership-lease"]];
  static override usage = Command.Usage({
    category: "Applications",
    description: "show or set an application's leadership lease",
    details: `
      One unit of each application leads it, holding a lease it renews at half the lease. When the
      leader's agent dies, another unit takes over about one lease later; a leader that cannot renew
      answers \`is-leader\` false after half the lease. The default is the controller's (60s); a
      database primary that must fail over fast wants a short one. From ${LEADERSHIP_LEASE.minSeconds}s to 1h.
      A change applies at each unit's next claim or renewal.
    `,
    examples: [
      ["Show it", "$0 leadership-lease db"],
      ["A 10 second lease", "$0 leadership-lease db 10s"],
      ["Back to the controller's", "$0 leadership-lease db --reset"],
    ],
  });

  app = Option.String({ required: true, name: "application" });
  lease = Option.String({ required: false, name: "duration" });
  reset = Option.Boolean("--reset", false, { description: "Use the controller's lease again" });

  async run(): Promise<number> {
    if (this.reset && this.lease !== undefined) throw new UsageError("give a duration or --reset, not both");
    let set: number | null | undefined;
    if (this.reset) set = null;
    else if (this.lease !== undefined) {
      const parsed = parseLeadershipLease(this.lease);
      if (!parsed.ok) throw new UsageError(`leadership lease: ${parsed.message}`);
      set = parsed.seconds;
    }
    const client = await this.connect();
    const model = await this.model();
    const app =
      set === undefined
        ? await client.getApplication(model, this.app)
        : await client.updateApplication(model, this.app, { leadershipLease: set });
    this.out(
      app.leadershipLeaseSeconds !== undefined
        ? formatLeaseSeconds(app.leadershipLeaseSeconds)
        : "(none: the controller's applies)",
    );
    return 0;
  }
}
