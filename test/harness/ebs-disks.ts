/**
 * EBS volumes of the fake EC2 (fake-ec2-volumes.ts) as the instances' test hosts see them: attached,
 * a volume is a loop device over a file of its own (so what was written on it is there wherever it
 * is attached next), named in the host's /dev/disk/by-id as a Nitro instance names an EBS volume;
 * detached (or its instance terminated), the loop device goes and the file stays.
 */
import { join } from "node:path";
import { aws } from "../../substrates";
import type { FakeEc2Boot } from "./cloud-init";
import type { FakeEc2Options } from "./fake-ec2";
import type { TestHost } from "./hosts";

export interface EbsDisks extends Required<Pick<FakeEc2Options, "onAttach" | "onDetach">> {
  /** The loop device of each attached volume, and the host it is plugged into. */
  plugged: Map<string, { host: TestHost; loop: string }>;
}

/** The fake's onAttach/onDetach for instances booted by `boot`, keeping the volumes' files in `dir`. */
export function ebsDisks(boot: FakeEc2Boot, dir: () => string): EbsDisks {
  const plugged = new Map<string, { host: TestHost; loop: string }>();
  return {
    plugged,
    onAttach: async (v, i) => {
      const host = boot.hosts.get(i.id)?.host;
      if (!host) throw new Error(`instance ${i.id} has no test host`);
      const { loop } = await host.plugDisk(v.sizeGiB * 1024, [aws.nitroDeviceName(v.id)], {
        file: join(dir(), "ebs", `${v.id}.img`),
      });
      plugged.set(v.id, { host, loop });
    },
    onDetach: async (v) => {
      const p = plugged.get(v.id);
      if (!p) return;
      await p.host.unplugDisk(p.loop);
      plugged.delete(v.id);
    },
  };
}
