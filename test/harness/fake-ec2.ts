/**
 * A FAKE Amazon EC2 endpoint for tests: AWS cannot be reached from here. Any SigV4 client (the real
 * `@aws-sdk/client-ec2` included, through its `endpoint` option) talks to it over HTTPS on 127.0.0.1
 * (or on `listen`, e.g. a test lab's bridge address when controllers inside the lab call it).
 *
 * What it models, from AWS's public documentation (not from our code):
 * - The EC2 Query API, version 2016-11-15 ("Making API requests using the Query format"): POST (or
 *   GET) with `Action=…&Version=…` form parameters, lists as `Name.N`, structures as `Name.Field`;
 *   answers `<ActionResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` with `<requestId>`.
 * - Errors as "Error codes for the Amazon EC2 API" shows them: `<Response><Errors><Error><Code>…`
 *   `<Message>…</Message></Error></Errors><RequestID>…</RequestID></Response>`, HTTP 400 (401/403
 *   for authentication).
 * - Signature Version 4 ("Create a signed AWS API request", IAM User Guide): canonical request,
 *   string to sign, derived signing key, 15-minute clock window (RequestExpired).
 * - Actions (EC2 API Reference): RunInstances (ImageId, InstanceType default m1.small, MinCount,
 *   MaxCount, UserData limited to 16 KB before base64, Placement.AvailabilityZone, SubnetId,
 *   SecurityGroupId.N, TagSpecification.N, ClientToken idempotency), DescribeInstances (InstanceId.N,
 *   filters instance-id, instance-state-name, availability-zone, tag:<key>, tag-key with * and ?
 *   wildcards, MaxResults 5–1000 / NextToken), TerminateInstances, DescribeAvailabilityZones,
 *   CreateTags. Terminated instances stay visible (EC2 keeps them about an hour; here, forever).
 * - Images and block devices (EC2 API Reference: DescribeImages, RunInstances' BlockDeviceMapping.N,
 *   the EbsBlockDevice and Image data types): DescribeImages (ImageId.N; an unknown id is
 *   InvalidAMIID.NotFound) answers each image's architecture, root device name and type, and its
 *   block device mapping (the root snapshot's size); without ids it lists the `images` given (no
 *   public images are modelled). RunInstances' BlockDeviceMapping.N.DeviceName
 *   and .Ebs.VolumeSize / .VolumeType / .DeleteOnTermination resize the root volume when the name is
 *   the image's root device, or add a volume; a size below the root snapshot's is
 *   InvalidBlockDeviceMapping, one outside a volume type's range InvalidParameterValue
 *   (gp2/gp3 1–16,384 GiB, io1/io2 4–16,384, st1/sc1 125–16,384, standard 1–1,024). The volumes are
 *   answered in DescribeInstances' blockDeviceMapping. With no `images` option every well-formed
 *   AMI id is an x86_64 EBS image with root device /dev/xvda and an 8 GiB gp3 root snapshot (as
 *   Amazon Linux 2023's are); with it, only those images exist (RunInstances of another is
 *   InvalidAMIID.NotFound).
 * - EBS volumes (fake-ec2-volumes.ts, which says what it models): CreateVolume, AttachVolume,
 *   DetachVolume, DeleteVolume, DescribeVolumes; the volumes an instance is launched with are volumes
 *   too (tagged by a TagSpecification of ResourceType volume); CreateTags takes volume ids. An attached
 *   volume appears on the instance through the `onAttach` callback (e.g. a loop device on its test host).
 * Not modelled: VPCs, subnets and security groups as resources (ids are recorded, not checked),
 * stop/start, public addresses, other actions (InvalidAction). Parameters it does not know are
 * accepted and ignored; every accepted call is in {@link FakeEc2.calls} for assertions.
 * Instances "boot" through the `boot` callback (e.g. a test host running the user data).
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Agent } from "node:https";
import type { AddressInfo } from "node:net";
import { EC2Client } from "@aws-sdk/client-ec2";
import type { ControllerClient } from "../../api";
import { createCertificateAuthority, issueServerCertificate } from "../../controller";
import { Ec2Error, esc, filtered, hex17, list, paged, structs } from "./fake-ec2-query";
import type { FakeEbsOptions, FakeEbsVolume } from "./fake-ec2-volumes";
import { FakeEbs, VOLUME_SIZES, badVolumeType } from "./fake-ec2-volumes";

export type FakeInstanceState = "pending" | "running" | "shutting-down" | "terminated";
/** An AMI as DescribeImages answers it. */
export interface FakeImage {
  id: string;
  architecture: "x86_64" | "arm64" | "i386" | "x86_64_mac" | "arm64_mac";
  rootDeviceName: string;
  rootDeviceType: "ebs" | "instance-store";
  rootSnapshotGiB?: number;
}
/** An EBS volume an instance is launched with (its block device mapping). */
export interface FakeVolume {
  deviceName: string;
  volumeId: string;
  sizeGiB: number;
  volumeType: string;
  deleteOnTermination: boolean;
}
export interface FakeInstance {
  id: string;
  imageId: string;
  instanceType: string;
  zone: string;
  subnetId?: string;
  /**
   * The image's root device (EBS images) and every volume attached at launch, root first (as
   * launched: DescribeVolumes and {@link FakeEc2.volumes} show them as they are now, with those attached since).
   */
  rootDeviceName?: string;
  volumes: FakeVolume[];
  securityGroupIds: string[];
  tags: Record<string, string>;
  /** The base64-decoded bytes of UserData exactly as sent. */
  userData?: Buffer;
  clientToken?: string;
  state: FakeInstanceState;
  stateReason?: { code: string; message: string };
  stateTransitionReason?: string;
  privateIp?: string;
  launchTime: Date;
  reservationId: string;
}
export interface FakeEc2Options {
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Default: `${region}a`, `${region}b`, `${region}c`. */
  zones?: string[];
  /** Brings an instance up; its stop() is called on termination. A rejection terminates the instance. */
  boot: (i: FakeInstance) => Promise<{ privateIp: string; stop(): Promise<void> }>;
  /** The address to listen on (and name in the certificate). @default "127.0.0.1" */
  listen?: string;
  /** The images that exist (see the module comment for the default). */
  images?: FakeImage[];
  /** How long an EBS volume's state change takes, in ms (fake-ec2-volumes.ts). @default 50 */
  volumeTransitionMs?: number;
  /** An attached volume appears on the instance (e.g. a loop device on its test host, under the name Nitro gives it). */
  onAttach?: FakeEbsOptions["onAttach"];
  /** A volume being detached leaves the instance; rejects while the instance still uses it. */
  onDetach?: FakeEbsOptions["onDetach"];
}

const VERSION = "2016-11-15";
const XMLNS = `http://ec2.amazonaws.com/doc/${VERSION}/`;
const OWNER_ID = "123456789012";
const USER_DATA_LIMIT = 16384;
const DEFAULT_IMAGE: Omit<FakeImage, "id"> = {
  architecture: "x86_64",
  rootDeviceName: "/dev/xvda",
  rootDeviceType: "ebs",
  rootSnapshotGiB: 8,
};
const STATE_CODES: Record<FakeInstanceState, number> = { pending: 0, running: 16, "shutting-down": 32, terminated: 48 };
/** DescribeInstances filters other than tag:<key>, and the values of an instance each one matches. */
const FILTERS = new Map<string, (i: FakeInstance) => string[]>([
  ["instance-id", (i) => [i.id]],
  ["instance-state-name", (i) => [i.state]],
  ["availability-zone", (i) => [i.zone]],
  ["tag-key", (i) => Object.keys(i.tags)],
]);

export class FakeEc2 {
  readonly calls: { action: string; params: Record<string, string> }[] = [];
  readonly zones: string[];
  private readonly all: FakeInstance[] = [];
  private readonly booting = new Map<
    string,
    { done: Promise<void>; handle?: { stop(): Promise<void> }; stopped?: boolean }
  >();
  private readonly byToken = new Map<string, { fingerprint: string; reservationId: string }>();
  private readonly background = new Set<Promise<void>>();
  private server?: ReturnType<typeof createServer>;
  private nextZone = 0;
  private readonly ebs: FakeEbs;
  endpoint = "";
  caCert = "";

  constructor(private readonly o: FakeEc2Options) {
    this.zones = o.zones ?? ["a", "b", "c"].map((z) => `${o.region}${z}`);
    this.ebs = new FakeEbs({
      zones: this.zones,
      instance: (id) => this.find([id])[0]!,
      ...(o.volumeTransitionMs !== undefined ? { transitionMs: o.volumeTransitionMs } : {}),
      ...(o.onAttach ? { onAttach: o.onAttach } : {}),
      ...(o.onDetach ? { onDetach: o.onDetach } : {}),
    });
  }
  get region(): string {
    return this.o.region;
  }
  get credentials(): { accessKeyId: string; secretAccessKey: string } {
    return this.o.credentials;
  }

  async start(): Promise<{ endpoint: string; caCert: string }> {
    const ca = await createCertificateAuthority("fake-ec2");
    const host = this.o.listen ?? "127.0.0.1";
    const cert = await issueServerCertificate(ca, [host]);
    const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, host, resolve));
    this.server = server;
    this.endpoint = `https://${host}:${(server.address() as AddressInfo).port}`;
    this.caCert = ca.certPem;
    return { endpoint: this.endpoint, caCert: this.caCert };
  }

  /** Closes the endpoint and stops every instance not yet terminated (after its boot settles). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) {
      const closed = new Promise((r) => server.close(r));
      server.closeAllConnections();
      await closed;
    }
    await Promise.all([...this.booting.values()].map((b) => b.done));
    await Promise.all([...this.background]);
    await Promise.all(this.all.filter((i) => i.state !== "terminated").map((i) => this.shutDown(i)));
    await this.ebs.settle();
  }

  instances(): FakeInstance[] {
    return [...this.all];
  }

  /** The EBS volumes not yet deleted (those instances were launched with included). */
  volumes(): FakeEbsVolume[] {
    return this.ebs.all();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    try {
      const body = await readBody(req, 1 << 20);
      this.verifySignature(req, body);
      const params = Object.fromEntries(new URLSearchParams(req.url?.split("?")[1] ?? ""));
      if ((req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded"))
        Object.assign(params, Object.fromEntries(new URLSearchParams(body.toString("utf8"))));
      const { Action: action, Version: _version, ...rest } = params;
      if (!action) throw new Ec2Error("MissingAction", "The request must contain the parameter Action");
      const run = Object.hasOwn(this.actions, action) ? this.actions[action] : undefined;
      if (!run) throw new Ec2Error("InvalidAction", `The action ${action} is not valid for this web service.`);
      this.calls.push({ action, params: rest });
      if (rest.DryRun === "true")
        throw new Ec2Error("DryRunOperation", "Request would have succeeded, but DryRun flag is set.", 412);
      const inner = run(rest);
      send(
        res,
        200,
        requestId,
        `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${XMLNS}"><requestId>${requestId}</requestId>${inner}</${action}Response>`,
      );
    } catch (err) {
      const e =
        err instanceof Ec2Error
          ? err
          : new Ec2Error(
              "InternalError",
              `An internal error has occurred (fake: ${(err as Error)?.stack ?? String(err)})`,
              500,
            );
      send(
        res,
        e.status,
        requestId,
        `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${esc(e.code)}</Code><Message>${esc(e.message)}</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`,
      );
    }
  }

  /** SigV4, Authorization header form, written from AWS's description of the algorithm. */
  private verifySignature(req: IncomingMessage, body: Buffer): void {
    const auth = req.headers.authorization;
    if (!auth)
      throw new Ec2Error(
        "MissingAuthenticationToken",
        "The request must contain either a valid (registered) AWS access key ID or X.509 certificate.",
        403,
      );
    const m =
      /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;_.-]+),\s*Signature=([0-9a-f]{64})$/.exec(
        auth,
      );
    if (!m) throw new Ec2Error("IncompleteSignature", "The request signature does not conform to AWS standards.");
    const [, accessKeyId, day, region, service, signedList, signature] = m as unknown as string[];
    if (accessKeyId !== this.o.credentials.accessKeyId)
      throw new Ec2Error("AuthFailure", "AWS was not able to validate the provided access credentials", 401);
    const amzDate = header(req, "x-amz-date");
    const signed = signedList!.split(";");
    if (!amzDate || !/^\d{8}T\d{6}Z$/.test(amzDate))
      throw new Ec2Error(
        "IncompleteSignature",
        "Authorization header requires existence of a valid 'X-Amz-Date' header.",
      );
    if (!signed.includes("host") || !signed.includes("x-amz-date"))
      throw new Ec2Error("IncompleteSignature", "The host and x-amz-date headers must be signed.");
    const when = Date.parse(
      `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
    );
    if (!(Math.abs(Date.now() - when) <= 15 * 60_000))
      throw new Ec2Error("RequestExpired", `Request has expired. Timestamp date is ${amzDate}`);
    const mismatch = (why: string) =>
      new Ec2Error(
        "SignatureDoesNotMatch",
        `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. (${why})`,
        403,
      );
    if (day !== amzDate.slice(0, 8)) throw mismatch("credential date differs from X-Amz-Date");
    if (region !== this.o.region || service !== "ec2")
      throw mismatch(`credential should be scoped to ${this.o.region}/ec2, not ${region}/${service}`);
    const payloadHash = sha256(body);
    const claimed = header(req, "x-amz-content-sha256");
    if (claimed !== undefined && claimed !== payloadHash)
      throw mismatch("x-amz-content-sha256 does not match the payload");
    const [rawPath = "/", rawQuery = ""] = (req.url ?? "/").split("?", 2);
    const canonicalRequest = [
      req.method,
      canonicalUri(rawPath),
      canonicalQuery(rawQuery),
      ...[...signed].sort().map((h) => `${h}:${header(req, h) ?? ""}`),
      "",
      [...signed].sort().join(";"),
      payloadHash,
    ].join("\n");
    const scope = `${day}/${region}/ec2/aws4_request`;
    const stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonicalRequest)].join("\n");
    let key: Buffer = hmac(`AWS4${this.o.credentials.secretAccessKey}`, day!);
    for (const part of [region!, "ec2", "aws4_request"]) key = hmac(key, part);
    const expected = hmac(key, stringToSign);
    if (!timingSafeEqual(expected, Buffer.from(signature!, "hex"))) throw mismatch("signature");
  }

  private readonly actions: Record<string, (p: Record<string, string>) => string> = {
    RunInstances: (p) => this.runInstances(p),
    DescribeInstances: (p) => this.describeInstances(p),
    TerminateInstances: (p) => this.terminateInstances(p),
    DescribeImages: (p) => {
      const ids = list(p, "ImageId");
      const images = ids.length > 0 ? ids.map((id) => this.image(id)) : (this.o.images ?? []);
      return `<imagesSet>${images.map(imageXml).join("")}</imagesSet>`;
    },
    DescribeAvailabilityZones: (p) => {
      const wanted = list(p, "ZoneName");
      for (const z of wanted)
        if (!this.zones.includes(z)) throw new Ec2Error("InvalidParameterValue", `The zone '${z}' does not exist.`);
      const items = this.zones
        .filter((z) => wanted.length === 0 || wanted.includes(z))
        .map(
          (z) =>
            `<item><zoneName>${esc(z)}</zoneName><zoneState>available</zoneState><regionName>${esc(this.o.region)}</regionName><zoneId>${esc(this.o.region.replace(/-/g, ""))}-az${this.zones.indexOf(z) + 1}</zoneId><zoneType>availability-zone</zoneType><optInStatus>opt-in-not-required</optInStatus><groupName>${esc(this.o.region)}</groupName><networkBorderGroup>${esc(this.o.region)}</networkBorderGroup><messageSet/></item>`,
        );
      return `<availabilityZoneInfo>${items.join("")}</availabilityZoneInfo>`;
    },
    CreateTags: (p) => {
      const ids = list(p, "ResourceId");
      if (ids.length === 0)
        throw new Ec2Error("MissingParameter", "The request must contain the parameter resourceIdSet");
      const volumeIds = ids.filter((id) => id.startsWith("vol-"));
      const instances = this.find(ids.filter((id) => !id.startsWith("vol-")));
      this.ebs.find(volumeIds);
      const tags = structs(p, "Tag");
      for (const t of tags) {
        if (!t.Key) throw new Ec2Error("InvalidParameterValue", "Tag keys must not be empty");
        for (const i of instances) i.tags[t.Key] = t.Value ?? "";
      }
      this.ebs.tag(volumeIds, tags);
      return "<return>true</return>";
    },
    ...this.ebsActions(),
  };

  /** The EBS actions (fake-ec2-volumes.ts), each run by the volumes of this endpoint. */
  private ebsActions(): Record<string, (p: Record<string, string>) => string> {
    return Object.fromEntries(
      ["CreateVolume", "AttachVolume", "DetachVolume", "DeleteVolume", "DescribeVolumes"].map((a) => [
        a,
        (p: Record<string, string>) => this.ebs.actions[a]!(p),
      ]),
    );
  }

  private runInstances(p: Record<string, string>): string {
    const imageId = p.ImageId;
    if (!imageId) throw new Ec2Error("MissingParameter", "The request must contain the parameter ImageId");
    if (!/^ami-[0-9a-f]{8,17}$/.test(imageId))
      throw new Ec2Error("InvalidAMIID.Malformed", `Invalid id: "${imageId}" (expecting "ami-...")`);
    const min = count(p, "MinCount"),
      max = count(p, "MaxCount");
    if (min > max)
      throw new Ec2Error(
        "InvalidParameterValue",
        `Invalid value '${min}' for minCount. Must be less than or equal to maxCount (${max}).`,
      );
    let userData: Buffer | undefined;
    if (p.UserData !== undefined) {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(p.UserData) || p.UserData.length % 4 !== 0)
        throw new Ec2Error("InvalidParameterValue", "Invalid BASE64 encoding of user data.");
      userData = Buffer.from(p.UserData, "base64");
      if (userData.length > USER_DATA_LIMIT)
        throw new Ec2Error("InvalidParameterValue", `User data is limited to ${USER_DATA_LIMIT} bytes`);
    }
    const zone = p["Placement.AvailabilityZone"];
    if (zone !== undefined && !this.zones.includes(zone))
      throw new Ec2Error("InvalidParameterValue", `Invalid availability zone: [${zone}]`);
    const image = this.image(imageId);
    const volumes = launchVolumes(image, structs(p, "BlockDeviceMapping"));
    const { ClientToken: clientToken, ...rest } = p;
    const fingerprint = JSON.stringify(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)));
    if (clientToken !== undefined) {
      const seen = this.byToken.get(clientToken);
      if (seen && seen.fingerprint !== fingerprint)
        throw new Ec2Error(
          "IdempotentParameterMismatch",
          "Arguments on this idempotent request are inconsistent with arguments used in previous request(s).",
        );
      if (seen) return this.reservationXml(seen.reservationId, false);
    }
    const tags: Record<string, string> = {};
    const volumeTags: Record<string, string> = {};
    for (const spec of structs(p, "TagSpecification")) {
      const into = spec.ResourceType === "instance" ? tags : spec.ResourceType === "volume" ? volumeTags : undefined;
      if (!into) continue; // network interfaces, launch templates…: not modelled
      for (const t of structs(spec, "Tag")) if (t.Key) into[t.Key] = t.Value ?? "";
    }
    const reservationId = `r-${hex17()}`;
    const launched = Array.from({ length: max }, (): FakeInstance => ({
      id: `i-${hex17()}`,
      imageId,
      instanceType: p.InstanceType ?? "m1.small",
      ...(image.rootDeviceType === "ebs" ? { rootDeviceName: image.rootDeviceName } : {}),
      volumes: volumes.map((v) => ({ ...v, volumeId: `vol-${hex17()}` })),
      zone: zone ?? this.zones[this.nextZone++ % this.zones.length]!,
      subnetId: p.SubnetId,
      securityGroupIds: list(p, "SecurityGroupId"),
      tags: { ...tags },
      userData,
      clientToken,
      state: "pending",
      launchTime: new Date(),
      reservationId,
    }));
    if (clientToken !== undefined) this.byToken.set(clientToken, { fingerprint, reservationId });
    for (const i of launched) {
      this.all.push(i);
      this.ebs.launched(i, i.volumes, volumeTags);
      this.boot(i);
    }
    return this.reservationXml(reservationId, false);
  }

  private boot(i: FakeInstance): void {
    const entry: { done: Promise<void>; handle?: { stop(): Promise<void> } } = { done: Promise.resolve() };
    entry.done = Promise.resolve()
      .then(() => this.o.boot(i))
      .then(
        (handle) => {
          entry.handle = handle;
          i.privateIp = handle.privateIp;
          if (i.state === "pending") i.state = "running";
        },
        (err: unknown) => {
          if (i.state !== "pending") return;
          i.state = "terminated";
          i.stateReason = {
            code: "Server.InternalError",
            message: `Server.InternalError: Internal error on launch (fake: ${(err as Error)?.message ?? String(err)})`,
          };
        },
      );
    this.booting.set(i.id, entry);
  }

  /** Waits for the boot to settle, then stops what it started and marks the instance terminated. */
  private async shutDown(i: FakeInstance): Promise<void> {
    if (i.state !== "shutting-down") {
      i.state = "shutting-down";
      i.stateReason = {
        code: "Client.UserInitiatedShutdown",
        message: "Client.UserInitiatedShutdown: User initiated shutdown",
      };
      i.stateTransitionReason = `User initiated (${new Date().toISOString().slice(0, 19).replace("T", " ")} GMT)`;
    }
    const b = this.booting.get(i.id);
    await b?.done;
    if (b?.handle && !b.stopped) {
      b.stopped = true;
      await b.handle.stop().catch(() => undefined);
    }
    await this.ebs.terminated(i);
    i.state = "terminated";
  }

  private terminateInstances(p: Record<string, string>): string {
    const ids = list(p, "InstanceId");
    if (ids.length === 0) throw new Ec2Error("MissingParameter", "The request must contain the parameter InstanceId");
    const items = this.find(ids).map((i) => {
      const previous = i.state;
      if (previous === "pending" || previous === "running") {
        const done = this.shutDown(i).finally(() => this.background.delete(done));
        this.background.add(done);
      }
      return `<item><instanceId>${i.id}</instanceId><currentState>${stateXml(i.state)}</currentState><previousState>${stateXml(previous)}</previousState></item>`;
    });
    return `<instancesSet>${items.join("")}</instancesSet>`;
  }

  private describeInstances(p: Record<string, string>): string {
    const ids = list(p, "InstanceId");
    const found = filtered(ids.length > 0 ? this.find(ids) : [...this.all], p, FILTERS);
    const { page, next } = paged(found, p, { min: 5, max: 1000, idsGiven: ids.length > 0, idsParam: "instancesSet" });
    const reservations = [...new Set(page.map((i) => i.reservationId))].map((r) => this.reservationXml(r, true, page));
    return `<reservationSet>${reservations.join("")}</reservationSet>${next}`;
  }

  /** The image `id`, or InvalidAMIID.Malformed / .NotFound as EC2 says it. */
  private image(id: string): FakeImage {
    if (!/^ami-[0-9a-f]{8,17}$/.test(id))
      throw new Ec2Error("InvalidAMIID.Malformed", `Invalid id: "${id}" (expecting "ami-...")`);
    if (!this.o.images) return { id, ...DEFAULT_IMAGE };
    const found = this.o.images.find((i) => i.id === id);
    if (!found) throw new Ec2Error("InvalidAMIID.NotFound", `The image id '[${id}]' does not exist`);
    return found;
  }

  /** The instances with these ids, or InvalidInstanceID.Malformed / .NotFound as EC2 says it. */
  private find(ids: string[]): FakeInstance[] {
    const bad = ids.find((id) => !/^i-[0-9a-f]{8,17}$/.test(id));
    if (bad) throw new Ec2Error("InvalidInstanceID.Malformed", `Invalid id: "${bad}"`);
    const missing = ids.filter((id) => !this.all.some((i) => i.id === id));
    if (missing.length === 1)
      throw new Ec2Error("InvalidInstanceID.NotFound", `The instance ID '${missing[0]}' does not exist`);
    if (missing.length > 1)
      throw new Ec2Error("InvalidInstanceID.NotFound", `The instance IDs '${missing.join(", ")}' do not exist`);
    return ids.map((id) => this.all.find((i) => i.id === id)!);
  }

  /** A reservation: as an `item` of reservationSet, or as the body of RunInstancesResponse. */
  private reservationXml(reservationId: string, asItem: boolean, among: FakeInstance[] = this.all): string {
    const items = this.all
      .filter((i) => i.reservationId === reservationId)
      .map((i, n) => (among.includes(i) ? instanceXml(i, n, this.o.region, this.ebs.attachedTo(i.id)) : ""));
    const xml = `<reservationId>${reservationId}</reservationId><ownerId>${OWNER_ID}</ownerId><groupSet/><instancesSet>${items.join("")}</instancesSet>`;
    return asItem ? `<item>${xml}</item>` : xml;
  }
}

/** An EC2 client of the real SDK that trusts the fake's CA (production code builds its own). */
export function ec2ClientFor(fake: FakeEc2, credentials = fake.credentials): EC2Client {
  if (!fake.endpoint) throw new Error("FakeEc2 is not started");
  return new EC2Client({
    region: fake.region,
    endpoint: fake.endpoint,
    credentials,
    requestHandler: { httpsAgent: new Agent({ ca: fake.caCert }) },
  });
}

/**
 * An aws model `model` of a Steward controller on the (started) fake: the fake's key stored as the
 * controller's credential `credential`, and the model's settings pointing at the fake's endpoint.
 */
export async function createModelOnFake(
  fake: FakeEc2,
  client: ControllerClient,
  model: string,
  credential = "prod",
): Promise<void> {
  if (!fake.endpoint) throw new Error("FakeEc2 is not started");
  await client.putCredential(credential, "aws", {
    "access-key-id": fake.credentials.accessKeyId,
    "secret-access-key": fake.credentials.secretAccessKey,
  });
  await client.createModel(model, undefined, "aws", {
    credential,
    settings: {
      region: fake.region,
      imageId: "ami-0123456789abcdef0",
      instanceType: "t3.small",
      endpoint: fake.endpoint,
      endpointCaCert: fake.caCert,
    },
  });
}

/** The volumes a launch attaches: the image's root (resized if a mapping names its device), then the other EBS mappings. */
function launchVolumes(image: FakeImage, mappings: Record<string, string>[]): Omit<FakeVolume, "volumeId">[] {
  const out: Omit<FakeVolume, "volumeId">[] = [];
  if (image.rootDeviceType === "ebs")
    out.push({
      deviceName: image.rootDeviceName,
      sizeGiB: image.rootSnapshotGiB ?? 8,
      volumeType: "gp3",
      deleteOnTermination: true,
    });
  for (const m of mappings) {
    const deviceName = m.DeviceName;
    if (!deviceName)
      throw new Ec2Error("MissingParameter", "The request must contain the parameter BlockDeviceMapping.deviceName");
    if (m.NoDevice !== undefined || m.VirtualName !== undefined) continue; // suppressing a device, instance store: not modelled
    const root = image.rootDeviceType === "ebs" && deviceName === image.rootDeviceName ? out[0] : undefined;
    const volumeType = m["Ebs.VolumeType"] ?? root?.volumeType ?? "gp2";
    const range = VOLUME_SIZES[volumeType];
    if (!range) throw badVolumeType(volumeType);
    const given = m["Ebs.VolumeSize"];
    const size = given === undefined ? root?.sizeGiB : Number(given);
    if (size === undefined)
      throw new Ec2Error("InvalidBlockDeviceMapping", `The device ${deviceName} needs a volume size or a snapshot`);
    if (!Number.isInteger(size) || size < range[0] || size > range[1])
      throw new Ec2Error(
        "InvalidParameterValue",
        `Volume size ${given} GiB is out of range for ${volumeType}: it must be from ${range[0]} to ${range[1]} GiB`,
      );
    if (root && size < root.sizeGiB)
      throw new Ec2Error(
        "InvalidBlockDeviceMapping",
        `Volume of size ${size}GB is smaller than snapshot 'snap-${image.id.slice(4)}', expect size >= ${root.sizeGiB}GB`,
      );
    const deleteOnTermination =
      m["Ebs.DeleteOnTermination"] !== undefined
        ? m["Ebs.DeleteOnTermination"] === "true"
        : (root?.deleteOnTermination ?? true);
    const volume = { deviceName, sizeGiB: size, volumeType, deleteOnTermination };
    if (root) out[0] = volume;
    else out.push(volume);
  }
  return out;
}

function imageXml(i: FakeImage): string {
  const root =
    i.rootDeviceType === "ebs"
      ? `<blockDeviceMapping><item><deviceName>${esc(i.rootDeviceName)}</deviceName><ebs><snapshotId>snap-${esc(i.id.slice(4))}</snapshotId><volumeSize>${i.rootSnapshotGiB ?? 8}</volumeSize><deleteOnTermination>true</deleteOnTermination><volumeType>gp3</volumeType><encrypted>false</encrypted></ebs></item></blockDeviceMapping>`
      : "<blockDeviceMapping/>";
  return (
    `<item><imageId>${esc(i.id)}</imageId><imageLocation>${OWNER_ID}/fake-${esc(i.id)}</imageLocation><imageState>available</imageState><imageOwnerId>${OWNER_ID}</imageOwnerId><isPublic>false</isPublic>` +
    `<architecture>${esc(i.architecture)}</architecture><imageType>machine</imageType><rootDeviceType>${i.rootDeviceType}</rootDeviceType><rootDeviceName>${esc(i.rootDeviceName)}</rootDeviceName>${root}<virtualizationType>hvm</virtualizationType><hypervisor>xen</hypervisor></item>`
  );
}

function instanceXml(i: FakeInstance, launchIndex: number, region: string, volumes: FakeEbsVolume[]): string {
  const opt = (tag: string, v: string | undefined) => (v === undefined ? "" : `<${tag}>${esc(v)}</${tag}>`);
  return (
    "<item>" +
    [
      `<instanceId>${i.id}</instanceId>`,
      opt("imageId", i.imageId),
      `<instanceState>${stateXml(i.state)}</instanceState>`,
      opt("privateDnsName", i.privateIp && `ip-${i.privateIp.replace(/\./g, "-")}.${region}.compute.internal`),
      "<dnsName/>",
      opt("reason", i.stateTransitionReason ?? ""),
      `<amiLaunchIndex>${launchIndex}</amiLaunchIndex>`,
      opt("instanceType", i.instanceType),
      `<launchTime>${i.launchTime.toISOString()}</launchTime>`,
      `<placement><availabilityZone>${esc(i.zone)}</availabilityZone><tenancy>default</tenancy></placement>`,
      "<monitoring><state>disabled</state></monitoring>",
      opt("subnetId", i.subnetId),
      opt("privateIpAddress", i.privateIp),
      `<groupSet>${i.securityGroupIds.map((g) => `<item><groupId>${esc(g)}</groupId></item>`).join("")}</groupSet>`,
      i.stateReason
        ? `<stateReason><code>${esc(i.stateReason.code)}</code><message>${esc(i.stateReason.message)}</message></stateReason>`
        : "",
      `<tagSet>${Object.entries(i.tags)
        .map(([k, v]) => `<item><key>${esc(k)}</key><value>${esc(v)}</value></item>`)
        .join("")}</tagSet>`,
      i.rootDeviceName
        ? `<rootDeviceType>ebs</rootDeviceType><rootDeviceName>${esc(i.rootDeviceName)}</rootDeviceName>`
        : "<rootDeviceType>instance-store</rootDeviceType>",
      `<blockDeviceMapping>${volumes.map(({ id, attachment: a }) => `<item><deviceName>${esc(a!.device)}</deviceName><ebs><volumeId>${id}</volumeId><status>${a!.state}</status><attachTime>${a!.attachTime.toISOString()}</attachTime><deleteOnTermination>${a!.deleteOnTermination}</deleteOnTermination></ebs></item>`).join("")}</blockDeviceMapping>`,
      opt("clientToken", i.clientToken),
    ].join("") +
    "</item>"
  );
}

const stateXml = (s: FakeInstanceState): string => `<code>${STATE_CODES[s]}</code><name>${s}</name>`;
const sha256 = (d: string | Buffer): string => createHash("sha256").update(d).digest("hex");
const hmac = (key: string | Buffer, data: string): Buffer => createHmac("sha256", key).update(data, "utf8").digest();

function send(res: ServerResponse, status: number, requestId: string, xml: string): void {
  res
    .writeHead(status, { "content-type": "text/xml;charset=UTF-8", "x-amzn-requestid": requestId, server: "AmazonEC2" })
    .end(xml);
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Ec2Error("RequestEntityTooLarge", "Request body is too large", 413));
        req.destroy();
      } else chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** All values of a header, trimmed, inner whitespace collapsed, joined by commas (SigV4's CanonicalHeaders). */
function header(req: IncomingMessage, name: string): string | undefined {
  const values: string[] = [];
  for (let k = 0; k < req.rawHeaders.length; k += 2)
    if (req.rawHeaders[k]!.toLowerCase() === name) values.push(req.rawHeaders[k + 1]!.trim().replace(/\s+/g, " "));
  return values.length ? values.join(",") : undefined;
}

/** RFC 3986 percent-encoding of everything but unreserved characters, as SigV4 wants. */
const uriEncode = (s: string): string =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Non-S3 services: dot segments removed, each segment of the already-encoded path encoded again. */
function canonicalUri(rawPath: string): string {
  const out: string[] = [];
  for (const seg of rawPath.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(uriEncode(seg));
  }
  return "/" + out.join("/") + (out.length > 0 && rawPath.endsWith("/") ? "/" : "");
}

function canonicalQuery(rawQuery: string): string {
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  return rawQuery
    .split("&")
    .filter(Boolean)
    .map((kv) => {
      const eq = kv.indexOf("=");
      return [uriEncode(decode(eq < 0 ? kv : kv.slice(0, eq))), uriEncode(decode(eq < 0 ? "" : kv.slice(eq + 1)))];
    })
    .sort(([a, av], [b, bv]) => (a! < b! ? -1 : a! > b! ? 1 : av! < bv! ? -1 : av! > bv! ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
}

function count(p: Record<string, string>, name: "MinCount" | "MaxCount"): number {
  if (p[name] === undefined) throw new Ec2Error("MissingParameter", `The request must contain the parameter ${name}`);
  const n = Number(p[name]);
  if (!Number.isInteger(n) || n < 1)
    throw new Ec2Error(
      "InvalidParameterValue",
      `Invalid value '${p[name]}' for ${name[0]!.toLowerCase()}${name.slice(1)}`,
    );
  if (n > 20)
    throw new Ec2Error(
      "InstanceLimitExceeded",
      `You have requested more instances (${n}) than your current instance limit of 20 allows for the specified instance type.`,
    );
  return n;
}
