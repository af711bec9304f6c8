/**
 * examples/aws under Pulumi's mocks: the resources each stage declares and how they are wired (the
 * network over three zones, the security group rules, the key's policy, the controller on the
 * instances' addresses, the aws model on the subnets), with mocked outputs shaped like AWS's; and
 * that each Steward resource's serialized provider accepts the example's arguments in its `check`.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import type { AwsStackSettings } from "../examples/aws/stack";
import { awsStack, subnetCidrs } from "../examples/aws/stack";
import { SECRET_SIG, unwrapSecrets as unwrap } from "./harness/pulumi-engine";

const repo = join(__dirname, "..", "..");
const ACCOUNT = "123456789012";
const REGION = "eu-west-1";
const ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"];
const AMI = "ami-0a1b2c3d4e5f67890";
const ADMIN = "198.51.100.7/32";
const PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExampleExampleExampleExampleExample user@laptop";
const PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nexample-not-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n";
const FINGERPRINTS = [1, 2, 3].map((n) => `SHA256:${"Q".repeat(42)}${n}`);
const CONTROLLER_UUID = "3f2a9c4e-7b1d-4e8a-9c2f-5d6e7f8a9b0c";

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  id: string;
  outputs: Record<string, unknown>;
}

const settings = (over: Partial<AwsStackSettings> = {}): AwsStackSettings => ({
  region: REGION,
  zones: ZONES,
  adminCidr: ADMIN,
  imageId: AMI,
  publicKey: PUBLIC_KEY,
  privateKey: pulumi.secret(PRIVATE_KEY),
  hostKeys: FINGERPRINTS,
  credential: "ec2-prod",
  operatorsDir: join(repo, "operators"),
  ...over,
});

/** Mocks answering as AWS and the Steward providers would: ids, ARNs, addresses in the subnet's block. */
async function mockAws(stack: string): Promise<Registered[]> {
  const registered: Registered[] = [];
  let serial = 0x1a2b3c;
  const hexId = (prefix: string): string => `${prefix}-0${(serial++).toString(16).padStart(16, "0")}`;
  const subnetBlocks = new Map<string, { cidr: string; zone: string; used: number }>();
  const ec2Arn = (resource: string): string => `arn:aws:ec2:${REGION}:${ACCOUNT}:${resource}`;
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        const inputs = args.inputs as Record<string, any>;
        const kind = args.type.split(":").pop()!;
        let id = hexId("x");
        const outs: Record<string, unknown> = { ...inputs };
        switch (args.type) {
          case "aws:ec2/vpc:Vpc":
            id = hexId("vpc");
            Object.assign(outs, { arn: ec2Arn(`vpc/${id}`), ownerId: ACCOUNT, defaultSecurityGroupId: hexId("sg") });
            break;
          case "aws:ec2/internetGateway:InternetGateway":
            id = hexId("igw");
            break;
          case "aws:ec2/routeTable:RouteTable":
            id = hexId("rtb");
            break;
          case "aws:ec2/routeTableAssociation:RouteTableAssociation":
            id = hexId("rtbassoc");
            break;
          case "aws:ec2/subnet:Subnet":
            id = hexId("subnet");
            subnetBlocks.set(id, { cidr: inputs.cidrBlock, zone: inputs.availabilityZone, used: 0 });
            Object.assign(outs, { arn: ec2Arn(`subnet/${id}`), ownerId: ACCOUNT });
            break;
          case "aws:ec2/securityGroup:SecurityGroup":
            id = hexId("sg");
            Object.assign(outs, {
              arn: ec2Arn(`security-group/${id}`),
              name: `${args.name}-20250101`,
              ownerId: ACCOUNT,
            });
            break;
          case "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
          case "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule":
            id = hexId("sgr");
            Object.assign(outs, { arn: ec2Arn(`security-group-rule/${id}`), securityGroupRuleId: id });
            break;
          case "aws:ec2/keyPair:KeyPair": {
            const keyName = `${args.name}-5f3c2a1`;
            id = keyName;
            Object.assign(outs, {
              keyName,
              keyPairId: hexId("key"),
              fingerprint: "Xk1f2Yy3Zz4Aa5Bb6Cc7Dd8Ee9Ff0Gg1Hh2Ii3Jj4",
              arn: ec2Arn(`key-pair/${keyName}`),
            });
            break;
          }
          case "aws:ec2/instance:Instance": {
            id = hexId("i");
            const block = subnetBlocks.get(inputs.subnetId);
            if (!block) throw new Error(`instance ${args.name} in unknown subnet ${inputs.subnetId}`);
            const [a, b, c] = block.cidr.split(".");
            Object.assign(outs, {
              arn: ec2Arn(`instance/${id}`),
              availabilityZone: block.zone,
              privateIp: `${a}.${b}.${c}.${10 + block.used++}`,
              publicIp: `203.0.113.${20 + (serial % 200)}`,
              instanceState: "running",
            });
            break;
          }
          case "aws:iam/user:User": {
            const name = `${args.name}-7d1e0f3`;
            id = name;
            Object.assign(outs, {
              name,
              arn: `arn:aws:iam::${ACCOUNT}:user${inputs.path ?? "/"}${name}`,
              uniqueId: "AIDAEXAMPLEUNIQUE0001",
            });
            break;
          }
          case "aws:iam/accessKey:AccessKey":
            id = "AKIAEXAMPLEKEYID0001";
            Object.assign(outs, { secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", status: "Active" });
            break;
          case "aws:iam/userPolicy:UserPolicy":
            id = `${inputs.user}:${args.name}-0c9b8a7`;
            break;
          default:
            if (kind === "Controller") {
              id = CONTROLLER_UUID;
              const addresses = (inputs.hosts as { host: string }[]).map((h) => `${h.host}:17070`);
              Object.assign(outs, {
                uuid: id,
                addresses,
                caCert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----",
                connection: {
                  addresses,
                  caCert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----",
                  user: "admin",
                  password: "generated-password",
                },
                leader: "r0",
                members: [],
              });
            } else if (kind === "Model") {
              id = "5b0e6f9c-1111-4a2b-8c3d-0e1f2a3b4c5d";
              outs.uuid = id;
            } else if (kind === "Application")
              Object.assign(outs, {
                uid: `uid-${args.name}`,
                unitNames: Array.from({ length: Number(inputs.units) }, (_, i) => `${args.name}/${i}`),
              });
            else if (kind === "Integration") Object.assign(outs, { integrationId: 7, interface: "http" });
            else throw new Error(`the mocks do not know ${args.type}`);
        }
        registered.push({ type: args.type, name: args.name, inputs, id, outputs: outs });
        return { id, state: outs };
      },
      call: (args) => {
        throw new Error(`unexpected invoke ${args.token}`);
      },
    },
    "steward-aws",
    stack,
    false,
  );
  return registered;
}

/** Resolves once every output of the stack and every resource's id has: all are registered then. */
async function settle(
  out: { resources: Record<string, pulumi.CustomResource | pulumi.CustomResource[]> } & Record<string, unknown>,
): Promise<void> {
  const outputs = Object.entries(out)
    .filter(([k, v]) => k !== "resources" && (pulumi.Output.isInstance(v) || Array.isArray(v)))
    .map(([, v]) => v as pulumi.Input<unknown>);
  const ids = Object.values(out.resources)
    .flat()
    .map((r) => r.id);
  await new Promise<void>((resolve) => pulumi.all([...outputs, ...ids]).apply(() => resolve()));
  await new Promise((r) => setTimeout(r, 100));
}

const short = (type: string): string =>
  type.replace("pulumi-nodejs:dynamic/steward:", "steward:").replace(/^aws:\w+\/\w+:/, "");
const counts = (rs: Registered[]): Record<string, number> =>
  rs.reduce<Record<string, number>>((a, r) => ({ ...a, [short(r.type)]: (a[short(r.type)] ?? 0) + 1 }), {});

test.serial(
  "the aws example's last stage: network over three zones, rules, the key's policy, the controller on the instances and an aws model",
  async (t) => {
    const registered = await mockAws("full");
    const out = awsStack(settings());
    await settle(out);
    const of = (type: string): Registered[] => registered.filter((r) => short(r.type) === type);
    const one = (type: string): Registered => {
      const rs = of(type);
      t.is(rs.length, 1, type);
      return rs[0]!;
    };
    const named = (name: string, type?: string): Registered =>
      registered.find((r) => r.name === name && (!type || short(r.type) === type)) ??
      (t.fail(`no resource ${name}`) as never);

    t.deepEqual(counts(registered), {
      Vpc: 1,
      InternetGateway: 1,
      RouteTable: 1,
      Subnet: 3,
      RouteTableAssociation: 3,
      SecurityGroup: 2,
      SecurityGroupIngressRule: 6,
      SecurityGroupEgressRule: 3,
      User: 1,
      AccessKey: 1,
      KeyPair: 1,
      Instance: 3,
      UserPolicy: 1,
      "steward:Controller": 1,
      "steward:Model": 1,
      "steward:Application": 2,
      "steward:Integration": 1,
    });

    // The network: three subnets of the VPC in three distinct zones, routed to the gateway.
    const vpc = one("Vpc");
    const subnets = of("Subnet");
    t.deepEqual(
      subnets.map((s) => s.inputs.availabilityZone),
      ZONES,
    );
    t.is(new Set(subnets.map((s) => s.inputs.availabilityZone)).size, 3);
    t.deepEqual(
      subnets.map((s) => s.inputs.cidrBlock),
      ["10.42.1.0/24", "10.42.2.0/24", "10.42.3.0/24"],
    );
    t.true(subnets.every((s) => s.inputs.vpcId === vpc.id && s.inputs.mapPublicIpOnLaunch === true));
    const gateway = one("InternetGateway");
    const routes = one("RouteTable");
    t.deepEqual(routes.inputs.routes, [{ cidrBlock: "0.0.0.0/0", gatewayId: gateway.id }]);
    t.deepEqual(
      of("RouteTableAssociation").map((a) => [a.inputs.subnetId, a.inputs.routeTableId]),
      subnets.map((s) => [s.id, routes.id]),
    );

    // Security groups: etcd only from the replicas' own group; the API from the VPC's block.
    const controllersSg = named("controllers", "SecurityGroup");
    const workloadsSg = named("workloads", "SecurityGroup");
    t.true([controllersSg, workloadsSg].every((g) => g.inputs.vpcId === vpc.id));
    const ingress = of("SecurityGroupIngressRule");
    const opens = (r: Registered, port: number): boolean =>
      r.inputs.ipProtocol === "-1" || (Number(r.inputs.fromPort) <= port && port <= Number(r.inputs.toPort));
    const etcd = ingress.filter(
      (r) => r.inputs.securityGroupId === controllersSg.id && (opens(r, 2379) || opens(r, 2380)),
    );
    t.is(etcd.length, 1, "one rule opens etcd's ports");
    t.like(etcd[0]!.inputs, {
      ipProtocol: "tcp",
      fromPort: 2379,
      toPort: 2380,
      referencedSecurityGroupId: controllersSg.id,
    });
    t.is(etcd[0]!.inputs.cidrIpv4, undefined, "etcd is not opened to any address block");
    const api = ingress.filter((r) => r.inputs.securityGroupId === controllersSg.id && opens(r, 17070));
    t.deepEqual(api.map((r) => r.inputs.cidrIpv4).sort(), [ADMIN, "10.42.0.0/16"].sort());
    t.true(api.every((r) => r.inputs.ipProtocol === "tcp" && r.inputs.fromPort === 17070 && r.inputs.toPort === 17070));
    t.is(
      named("controllers-api-from-vpc").inputs.cidrIpv4,
      vpc.outputs.cidrBlock,
      "the API rule takes the VPC's block",
    );
    const ssh = ingress.filter((r) => r.inputs.securityGroupId === controllersSg.id && opens(r, 22));
    t.deepEqual(
      ssh.map((r) => r.inputs.cidrIpv4 ?? r.inputs.referencedSecurityGroupId).sort(),
      [ADMIN, controllersSg.id].sort(),
    );
    t.false(
      ingress.some((r) => r.inputs.cidrIpv4 === "0.0.0.0/0"),
      "nothing is open to the internet",
    );
    const workloadIn = ingress.filter((r) => r.inputs.securityGroupId === workloadsSg.id);
    t.deepEqual(
      workloadIn.map((r) => r.inputs.referencedSecurityGroupId),
      [workloadsSg.id],
      "workloads take connections only from each other",
    );
    const egress = of("SecurityGroupEgressRule");
    t.like(
      egress.find(
        (r) =>
          r.inputs.securityGroupId === workloadsSg.id &&
          opens(r, 17070) &&
          r.inputs.referencedSecurityGroupId === controllersSg.id,
      )?.inputs,
      { fromPort: 17070, toPort: 17070, ipProtocol: "tcp" },
    );
    t.false(
      egress.some((r) => r.inputs.securityGroupId === workloadsSg.id && r.inputs.cidrIpv4 !== undefined),
      "workloads reach no address block outside their groups",
    );

    // Controller hosts: one per subnet, in the controllers' group, with the key pair.
    const keyPair = one("KeyPair");
    t.is(keyPair.inputs.publicKey, PUBLIC_KEY);
    const hosts = of("Instance");
    t.deepEqual(
      hosts.map((h) => h.inputs.subnetId),
      subnets.map((s) => s.id),
    );
    t.true(
      hosts.every(
        (h) =>
          h.inputs.ami === AMI &&
          h.inputs.keyName === keyPair.outputs.keyName &&
          JSON.stringify(h.inputs.vpcSecurityGroupIds) === JSON.stringify([controllersSg.id]),
      ),
    );
    t.true(
      hosts.every((h) => !Object.keys(h.inputs.tags as object).includes("steward:controller")),
      "the key may not terminate the controller's own hosts",
    );

    // The key and its policy: the five EC2 calls, launches and terminations tied to this controller's tag.
    const user = one("User");
    t.is(one("AccessKey").inputs.user, user.outputs.name);
    const policy = one("UserPolicy");
    t.is(policy.inputs.user, user.outputs.name);
    const doc = JSON.parse(String(policy.inputs.policy)) as {
      Statement: {
        Action: string | string[];
        Resource: string | string[];
        Condition?: Record<string, Record<string, string>>;
      }[];
    };
    const list = (v: string | string[]): string[] => (Array.isArray(v) ? v : [v]);
    t.deepEqual([...new Set(doc.Statement.flatMap((s) => list(s.Action)))].sort(), [
      "ec2:CreateTags",
      "ec2:DescribeAvailabilityZones",
      "ec2:DescribeInstances",
      "ec2:RunInstances",
      "ec2:TerminateInstances",
    ]);
    const instanceArns = `arn:aws:ec2:${REGION}:${ACCOUNT}:instance/*`;
    const statementsFor = (action: string): typeof doc.Statement =>
      doc.Statement.filter((s) => list(s.Action).includes(action));
    const launchInstance = statementsFor("ec2:RunInstances").filter((s) => list(s.Resource).includes(instanceArns));
    t.is(launchInstance.length, 1);
    t.deepEqual(launchInstance[0]!.Condition, {
      StringEquals: { "aws:RequestTag/steward:controller": CONTROLLER_UUID },
    });
    const launchWhere = statementsFor("ec2:RunInstances").find((s) => !list(s.Resource).includes(instanceArns))!;
    t.deepEqual(
      list(launchWhere.Resource).filter((r) => r.includes(":subnet/")),
      subnets.map((s) => s.outputs.arn),
    );
    t.deepEqual(
      list(launchWhere.Resource).filter((r) => r.includes(":security-group/")),
      [controllersSg.outputs.arn, workloadsSg.outputs.arn],
    );
    t.true(list(launchWhere.Resource).includes(`arn:aws:ec2:${REGION}::image/${AMI}`));
    t.false(
      list(launchWhere.Resource).some((r) => r.includes("instance/") || r === "*"),
      "the untagged part of a launch names no instance",
    );
    t.deepEqual(
      statementsFor("ec2:TerminateInstances").map((s) => [s.Resource, s.Condition]),
      [[instanceArns, { StringEquals: { "ec2:ResourceTag/steward:controller": CONTROLLER_UUID } }]],
    );
    t.deepEqual(
      statementsFor("ec2:CreateTags").map((s) => s.Condition?.StringEquals?.["ec2:CreateAction"]),
      ["RunInstances"],
    );
    t.true(
      doc.Statement.filter((s) => list(s.Resource).includes("*")).every((s) =>
        list(s.Action).every((a) => a.startsWith("ec2:Describe")),
      ),
      "only the calls EC2 cannot narrow apply to every resource",
    );
    t.true(doc.Statement.every((s) => (s as { Effect?: string }).Effect === "Allow"));

    // The controller: three replicas on the instances' private addresses, host keys pinned.
    const controller = one("steward:Controller");
    const ctl = unwrap(controller.inputs) as Record<string, unknown>;
    t.is(ctl.substrate, "ssh");
    t.is(ctl.replicas, 3);
    t.deepEqual(
      ctl.hosts,
      hosts.map((h, i) => ({ host: h.outputs.privateIp, user: "ubuntu", hostKey: FINGERPRINTS[i] })),
    );
    t.deepEqual(
      hosts.map((h) => h.outputs.privateIp),
      ["10.42.1.10", "10.42.2.10", "10.42.3.10"],
    );
    t.true(SECRET_SIG in (controller.inputs.privateKey as object), "the private key goes to the provider as a secret");

    // The model: aws, the stored credential, the three subnets and the workloads' group.
    const model = one("steward:Model");
    const m = unwrap(model.inputs) as Record<string, unknown>;
    t.is(m.substrate, "aws");
    t.is(m.credential, "ec2-prod");
    t.deepEqual(m.aws, {
      region: REGION,
      imageId: AMI,
      instanceType: "t3.small",
      subnetIds: subnets.map((s) => s.id),
      securityGroupIds: [workloadsSg.id],
    });
    t.deepEqual((m.connection as { addresses: string[] }).addresses, [
      "10.42.1.10:17070",
      "10.42.2.10:17070",
      "10.42.3.10:17070",
    ]);

    // The applications and their integration.
    const web = unwrap(named("web").inputs) as Record<string, unknown>;
    const checker = unwrap(named("checker").inputs) as Record<string, unknown>;
    t.like(web, { model: "shop", units: 3, config: { greeting: "Hello from AWS" } });
    t.true(String((web.operator as { path: string }).path).endsWith(join("operators", "hello-http")));
    t.like(checker, { model: "shop", units: 1 });
    t.true(String((checker.operator as { path: string }).path).endsWith(join("operators", "http-checker")));
    t.true(
      [web, checker].every((a) => (a.operator as { hash: string }).hash.length > 0),
      "both operators were read",
    );
    const integration = unwrap(named("web-checker").inputs) as Record<string, unknown>;
    t.deepEqual(integration.endpoints, ["web:website", "checker:upstream"]);
    t.deepEqual(integration.applicationUids, ["uid-web", "uid-checker"]);

    // What the stack gives the next steps.
    const command = await new Promise<string>((resolve) => out.replicaCloudCommand.apply(resolve));
    t.is(
      command,
      `steward set-replica-cloud aws --credential ec2-prod --region ${REGION} --image ${AMI} --instance-type t3.small ${subnets.map((s) => `--subnet ${s.id}`).join(" ")} --security-group ${controllersSg.id}`,
    );
    t.is(out.stage, 3);

    // Each Steward resource's serialized provider loads on its own and its check accepts the example.
    const requireFromString = require("require-from-string") as (code: string) => {
      handler: () => pulumi.dynamic.ResourceProvider;
    };
    for (const r of registered.filter((x) => x.type.startsWith("pulumi-nodejs:dynamic/steward:"))) {
      const { __provider: text, ...inputs } = unwrap(r.inputs) as Record<string, unknown>;
      t.false(String(text).includes("PRIVATE KEY"), `${r.name}: no key in the provider text`);
      const checked = await requireFromString(String(text)).handler().check!({}, inputs);
      t.deepEqual(checked.failures ?? [], [], `${r.name} passes its provider's check`);
    }
  },
);

test.serial(
  "until the host keys are given, only the network, the key and the hosts are declared; until the credential, no model",
  async (t) => {
    const first = await mockAws("stage1");
    const out1 = awsStack(settings({ hostKeys: undefined, credential: undefined, adminCidr: undefined }));
    await settle(out1);
    t.is(out1.stage, 1);
    t.deepEqual(counts(first), {
      Vpc: 1,
      InternetGateway: 1,
      RouteTable: 1,
      Subnet: 3,
      RouteTableAssociation: 3,
      SecurityGroup: 2,
      SecurityGroupIngressRule: 4,
      SecurityGroupEgressRule: 3,
      User: 1,
      AccessKey: 1,
      KeyPair: 1,
      Instance: 3,
    });
    t.false(
      first.some((r) => r.inputs.cidrIpv4 === ADMIN || (r.inputs.fromPort === 22 && r.inputs.cidrIpv4 !== undefined)),
      "no admin rule without an admin block",
    );

    const second = await mockAws("stage2");
    const out2 = awsStack(settings({ credential: undefined }));
    await settle(out2);
    t.is(out2.stage, 2);
    t.is(counts(second)["steward:Controller"], 1);
    t.is(counts(second).UserPolicy, 1);
    t.false("steward:Model" in counts(second));
    t.false("steward:Application" in counts(second));
    const command = await new Promise<string>((resolve) => out2.replicaCloudCommand.apply(resolve));
    t.regex(command, /--credential steward-ec2 /, "the command names the credential the README stores");
  },
);

test("settings that cannot make the stack are refused before anything is declared", (t) => {
  t.throws(() => awsStack(settings({ zones: ["eu-west-1a", "eu-west-1b"] })), {
    message: /three distinct availability zones/,
  });
  t.throws(() => awsStack(settings({ zones: ["eu-west-1a", "eu-west-1a", "eu-west-1b"] })), {
    message: /three distinct/,
  });
  t.throws(() => awsStack(settings({ hostKeys: FINGERPRINTS.slice(0, 2) })), { message: /hostKeys/ });
  t.throws(() => awsStack(settings({ vpcCidr: "10.42.0.0/23" })), { message: /vpcCidr/ });
  t.deepEqual(subnetCidrs("10.42.0.0/16", 3), ["10.42.1.0/24", "10.42.2.0/24", "10.42.3.0/24"]);
  t.deepEqual(subnetCidrs("172.31.128.0/22", 3), ["172.31.129.0/24", "172.31.130.0/24", "172.31.131.0/24"]);
  t.deepEqual(subnetCidrs("192.168.77.9/20", 2), ["192.168.65.0/24", "192.168.66.0/24"], "host bits are dropped");
  t.throws(() => subnetCidrs("10.300.0.0/16", 3));
});
