/**
 * The AWS stack: a VPC over three zones, three EC2 instances as the hosts of a 3-replica controller
 * (installed over SSH, host keys pinned), an IAM user whose key lets the controller launch and
 * terminate only its own instances, then an aws model with two integrated applications whose
 * machines the controller launches itself.
 *
 * It comes up in three `pulumi up`s, each enabled by a setting (README.md says why and how):
 * 1. network, IAM user and key, the three instances;
 * 2. with `hostKeys` (read from the instances' consoles): the controller, and the key's policy
 *    (it names the controller's uuid);
 * 3. with `credential` (once the key is stored on the controller with `steward add-credential`):
 *    the model, its applications and their integration.
 */
import * as pulumi from "@pulumi/pulumi";
import * as ec2 from "@pulumi/aws/ec2";
import * as iam from "@pulumi/aws/iam";
import * as vpc from "@pulumi/aws/vpc";
import { join } from "node:path";
import { Application, Controller, Integration, Model } from "steward";
import type { SshHost } from "steward";

export interface AwsStackSettings {
  /** The region (the aws provider's `aws:region`); the model's instances are launched there. */
  region: string;
  /** Three availability zones of the region, one controller replica and one subnet in each. */
  zones: string[];
  /** @default "10.42.0.0/16"; the subnets are its 2nd, 3rd and 4th /24. */
  vpcCidr?: string;
  /** Where you run Pulumi and `steward` from: SSH (22) and the API (17070) are open to it. */
  adminCidr?: string;
  /** An image with cloud-init and curl (Ubuntu 24.04 as the README says) for every instance. */
  imageId: string;
  /** @default "t3.small" */
  controllerInstanceType?: string;
  /** @default "t3.small" */
  workloadInstanceType?: string;
  /** The OpenSSH public key the controller hosts are created with (an EC2 key pair). */
  publicKey: string;
  /** Its private key, for installing the controller over SSH. */
  privateKey: pulumi.Input<string>;
  /** The image's login user, with passwordless sudo. @default "ubuntu" */
  sshUser?: string;
  /** Stage 2: the three hosts' ED25519 key fingerprints (`SHA256:…`), in the instances' order. */
  hostKeys?: string[];
  /** Stage 3: the name the controller's AWS key is stored under on the controller (`steward add-credential`). */
  credential?: string;
  /** Units of the web application, one instance each. @default 3 */
  webUnits?: number;
  /** Where the example operators are (the repository's operators/). */
  operatorsDir: string;
}

/** Steward's API port, and etcd's client and peer ports between replicas. */
const API_PORT = 17070;
const ETCD_PORTS = { from: 2379, to: 2380 };
/** The credential name the printed commands use until `credential` is set. */
export const DEFAULT_CREDENTIAL = "steward-ec2";

export function awsStack(s: AwsStackSettings) {
  if (s.zones.length !== 3 || new Set(s.zones).size !== 3)
    throw new Error(`zones: give three distinct availability zones of ${s.region}, not ${JSON.stringify(s.zones)}`);
  if (s.hostKeys && s.hostKeys.length !== 3)
    throw new Error(`hostKeys: give the three controller hosts' fingerprints in order, not ${s.hostKeys.length}`);
  const vpcCidr = s.vpcCidr ?? "10.42.0.0/16";
  const cidrs = subnetCidrs(vpcCidr, 3);
  const tags = (name: string): Record<string, string> => ({ Name: `steward-${name}` });

  // --- Network: one public subnet per zone. The controllers call the EC2 API (on the internet) and
  // you reach the first of them from outside; the model's instances get addresses too, but their
  // security group lets nothing in from outside and nothing out except to the controllers.
  const network = new ec2.Vpc("vpc", {
    cidrBlock: vpcCidr,
    enableDnsSupport: true,
    enableDnsHostnames: true,
    tags: tags("vpc"),
  });
  const gateway = new ec2.InternetGateway("gateway", { vpcId: network.id, tags: tags("gateway") });
  const routes = new ec2.RouteTable("public", {
    vpcId: network.id,
    routes: [{ cidrBlock: "0.0.0.0/0", gatewayId: gateway.id }],
    tags: tags("public"),
  });
  const subnets = s.zones.map(
    (zone, i) =>
      new ec2.Subnet(`subnet-${i}`, {
        vpcId: network.id,
        availabilityZone: zone,
        cidrBlock: cidrs[i]!,
        mapPublicIpOnLaunch: true,
        tags: tags(`subnet-${zone}`),
      }),
  );
  subnets.forEach(
    (subnet, i) => new ec2.RouteTableAssociation(`public-${i}`, { subnetId: subnet.id, routeTableId: routes.id }),
  );

  // --- Security groups. Rules are resources of their own, so a rule can name its own group.
  const controllers = new ec2.SecurityGroup("controllers", {
    vpcId: network.id,
    description: "Steward controller replicas",
    tags: tags("controllers"),
  });
  const workloads = new ec2.SecurityGroup("workloads", {
    vpcId: network.id,
    description: "Instances of Steward's aws models",
    tags: tags("workloads"),
  });
  const ingress = (
    name: string,
    args: Omit<vpc.SecurityGroupIngressRuleArgs, "ipProtocol"> & { ipProtocol?: string },
  ): vpc.SecurityGroupIngressRule => new vpc.SecurityGroupIngressRule(name, { ipProtocol: "tcp", ...args });
  const egress = (
    name: string,
    args: Omit<vpc.SecurityGroupEgressRuleArgs, "ipProtocol"> & { ipProtocol?: string },
  ): vpc.SecurityGroupEgressRule => new vpc.SecurityGroupEgressRule(name, { ipProtocol: "tcp", ...args });
  // The API: agents, replicas being installed by the keeper, and clients inside the VPC.
  ingress("controllers-api-from-vpc", {
    securityGroupId: controllers.id,
    cidrIpv4: network.cidrBlock,
    fromPort: API_PORT,
    toPort: API_PORT,
    description: "Steward API from the VPC",
  });
  // etcd: only between replicas (any instance in this group, which the keeper's new replicas join).
  ingress("controllers-etcd", {
    securityGroupId: controllers.id,
    referencedSecurityGroupId: controllers.id,
    fromPort: ETCD_PORTS.from,
    toPort: ETCD_PORTS.to,
    description: "etcd between replicas",
  });
  // SSH between replicas: the first replica installs the other two (enable-ha), the leader
  // installs replacements on spare hosts, and a tunnel through one host (README.md) reaches the
  // others. Replicas share the CA key and the store: they are one trust domain already.
  ingress("controllers-ssh-between", {
    securityGroupId: controllers.id,
    referencedSecurityGroupId: controllers.id,
    fromPort: 22,
    toPort: 22,
    description: "SSH between replicas",
  });
  if (s.adminCidr) {
    ingress("controllers-ssh-admin", {
      securityGroupId: controllers.id,
      cidrIpv4: s.adminCidr,
      fromPort: 22,
      toPort: 22,
      description: "SSH from the admin network",
    });
    ingress("controllers-api-admin", {
      securityGroupId: controllers.id,
      cidrIpv4: s.adminCidr,
      fromPort: API_PORT,
      toPort: API_PORT,
      description: "Steward API from the admin network",
    });
  }
  // Out: the EC2 API, packages at first boot, the other replicas.
  egress("controllers-out", {
    securityGroupId: controllers.id,
    ipProtocol: "-1",
    cidrIpv4: "0.0.0.0/0",
    description: "EC2 API, packages, other replicas",
  });
  // Workload instances: the controllers' API (enrolment, agent, Node.js all come from there), and
  // each other on any TCP port (units publish their own address and port to related units).
  egress("workloads-to-controllers", {
    securityGroupId: workloads.id,
    referencedSecurityGroupId: controllers.id,
    fromPort: API_PORT,
    toPort: API_PORT,
    description: "Steward API",
  });
  egress("workloads-to-workloads", {
    securityGroupId: workloads.id,
    referencedSecurityGroupId: workloads.id,
    fromPort: 0,
    toPort: 65535,
    description: "units of related applications",
  });
  ingress("workloads-from-workloads", {
    securityGroupId: workloads.id,
    referencedSecurityGroupId: workloads.id,
    fromPort: 0,
    toPort: 65535,
    description: "units of related applications",
  });

  // --- The controller's own AWS identity: an IAM user and key (stored on the controller with
  // `steward add-credential`); its policy comes with the controller, as it names its uuid.
  const user = new iam.User("controller", { path: "/steward/", tags: tags("controller") });
  const accessKey = new iam.AccessKey("controller", { user: user.name });

  // --- The controller hosts, one per zone. The key pair and user data only matter at first boot:
  // they are ignored afterwards, so rotating the key or a newer image does not replace a replica's host.
  const keyPair = new ec2.KeyPair("controller-key", { publicKey: s.publicKey, tags: tags("controller-key") });
  const hosts = subnets.map(
    (subnet, i) =>
      new ec2.Instance(
        `controller-${i}`,
        {
          ami: s.imageId,
          instanceType: s.controllerInstanceType ?? "t3.small",
          subnetId: subnet.id,
          vpcSecurityGroupIds: [controllers.id],
          keyName: keyPair.keyName,
          associatePublicIpAddress: true,
          metadataOptions: { httpTokens: "required" },
          rootBlockDevice: { volumeType: "gp3", volumeSize: 16, encrypted: true },
          userData: CONTROLLER_USER_DATA,
          // Not `steward:controller`: that tag marks the instances the controller launched itself, the
          // only ones its key may terminate.
          tags: { ...tags(`controller-${i}`), "steward:role": "controller-host" },
        },
        { ignoreChanges: ["ami", "keyName", "userData"] },
      ),
  );

  const ec2Arn = network.arn.apply((arn) => arn.split(":").slice(0, 5).join(":")); // arn:aws:ec2:REGION:ACCOUNT
  const infrastructure = {
    vpcId: network.id,
    vpcCidr: network.cidrBlock,
    subnetIds: subnets.map((x) => x.id),
    controllerSecurityGroupId: controllers.id,
    workloadSecurityGroupId: workloads.id,
    controllerInstanceIds: hosts.map((h) => h.id),
    controllerPrivateIps: hosts.map((h) => h.privateIp),
    controllerPublicIps: hosts.map((h) => h.publicIp),
    /** The host to tunnel through (README.md): the first controller host's public address. */
    tunnelHost: hosts[0]!.publicIp,
    accessKeyId: accessKey.id,
    secretAccessKey: accessKey.secret,
    /** `steward set-replica-cloud …` for this network, to run once the credential is stored. */
    replicaCloudCommand: pulumi.interpolate`steward set-replica-cloud aws --credential ${s.credential ?? DEFAULT_CREDENTIAL} --region ${s.region} --image ${s.imageId} --instance-type ${s.controllerInstanceType ?? "t3.small"} ${pulumi.all(subnets.map((x) => x.id)).apply((ids) => ids.map((id) => `--subnet ${id}`).join(" "))} --security-group ${controllers.id}`,
  };
  const resources = { network, subnets, controllers, workloads, user, accessKey, keyPair, hosts };
  if (!s.hostKeys) return { stage: 1, ...infrastructure, resources };

  // --- Stage 2: the controller, on the hosts' private addresses. Those are what the replicas
  // advertise: etcd between them must match the security group rule above (which only sees
  // private addresses), and agents reach them inside the VPC. Pulumi and `steward` therefore run
  // where the VPC's addresses are routed (README.md: a tunnel, a VPN or peering).
  const hostKeys = s.hostKeys;
  const controller = new Controller(
    "prod",
    {
      substrate: "ssh",
      hosts: hosts.map((h, i) =>
        h.privateIp.apply((ip): SshHost => ({ host: ip, user: s.sshUser ?? "ubuntu", hostKey: hostKeys[i]! })),
      ),
      replicas: 3,
      privateKey: s.privateKey,
      replaceAfterSeconds: 300,
      maxReplacementsPerHour: 2,
    },
    {
      // The provider re-creates the controller when its first host changes. Once it runs, it keeps
      // its own membership (the keeper replaces lost replicas), so a re-created first instance must
      // not take every model with it.
      ignoreChanges: ["hosts[0]"],
    },
  );

  // What the key may do: launch and tag instances carrying this controller's tag, into this
  // network only; terminate only instances carrying it; list instances and zones (EC2 cannot
  // narrow those two). The tag is set at launch (RunInstances' TagSpecifications) and cannot be
  // added later: CreateTags is allowed only as part of RunInstances.
  const policy = new iam.UserPolicy("controller-ec2", {
    user: user.name,
    policy: pulumi
      .all([ec2Arn, controller.uuid, pulumi.all(subnets.map((x) => x.arn)), controllers.arn, workloads.arn])
      .apply(([arn, uuid, subnetArns, controllersArn, workloadsArn]) =>
        JSON.stringify(
          controllerPolicy({
            ec2Arn: arn,
            region: s.region,
            controllerUuid: uuid,
            imageId: s.imageId,
            subnetArns,
            securityGroupArns: [controllersArn, workloadsArn],
          }),
        ),
      ),
  });
  const controlled = {
    ...infrastructure,
    controllerUuid: controller.uuid,
    addresses: controller.addresses,
    leader: controller.leader,
    members: controller.members,
    connection: controller.connection,
  };
  if (!s.credential) return { stage: 2, ...controlled, resources: { ...resources, controller, policy } };

  // --- Stage 3: a model whose machines are instances the controller launches with the stored key,
  // one per subnet in turn; web on three of them, a checker on a fourth, integrated. The model
  // waits for the key's policy, and is removed (its instances terminated) before the policy is.
  const model = new Model(
    "shop",
    {
      connection: controller.connection,
      substrate: "aws",
      credential: s.credential,
      aws: {
        region: s.region,
        imageId: s.imageId,
        instanceType: s.workloadInstanceType ?? "t3.small",
        subnetIds: subnets.map((x) => x.id),
        securityGroupIds: [workloads.id],
      },
    },
    { dependsOn: [policy] },
  );
  // Units wait for their instance to boot and enrol (a few minutes) before their hooks run.
  const web = new Application("web", {
    model,
    operator: join(s.operatorsDir, "hello-http"),
    units: s.webUnits ?? 3,
    config: { greeting: "Hello from AWS" },
    timeoutSeconds: 1200,
  });
  const checker = new Application("checker", {
    model,
    operator: join(s.operatorsDir, "http-checker"),
    units: 1,
    timeoutSeconds: 1200,
  });
  const integration = new Integration("web-checker", {
    endpoints: [
      { application: web, endpoint: "website" },
      { application: checker, endpoint: "upstream" },
    ],
  });
  return {
    stage: 3,
    ...controlled,
    webUnits: web.unitNames,
    checkerUnits: checker.unitNames,
    resources: { ...resources, controller, policy, model, web, checker, integration },
  };
}

/**
 * First boot of a controller host: etcd from the distribution (Steward needs 3.4 or newer; Ubuntu
 * 24.04 has 3.4.30), its packaged service stopped, since each replica runs its own member on
 * 2379-2380. Node.js comes over SSH at install when the image's is older than 20.
 */
export const CONTROLLER_USER_DATA = `#cloud-config
package_update: true
packages: [etcd-server]
runcmd:
  - [systemctl, disable, --now, etcd]
`;

export interface PolicyParts {
  /** `arn:PARTITION:ec2:REGION:ACCOUNT` */
  ec2Arn: string;
  region: string;
  controllerUuid: string;
  imageId: string;
  subnetArns: string[];
  securityGroupArns: string[];
}

/** The IAM policy of the controller's key: the five EC2 calls Steward makes (substrates/aws/ec2.ts), no more. */
export function controllerPolicy(p: PolicyParts) {
  const partition = p.ec2Arn.split(":")[1]!;
  const instances = `${p.ec2Arn}:instance/*`;
  const tagged = { "aws:RequestTag/steward:controller": p.controllerUuid };
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "LaunchOnlyInstancesTaggedForThisController",
        Effect: "Allow",
        Action: "ec2:RunInstances",
        Resource: instances,
        Condition: { StringEquals: tagged },
      },
      {
        Sid: "LaunchOnlyIntoThisNetworkFromThisImage",
        Effect: "Allow",
        Action: "ec2:RunInstances",
        Resource: [
          ...p.subnetArns,
          ...p.securityGroupArns,
          `${p.ec2Arn}:network-interface/*`,
          `${p.ec2Arn}:volume/*`,
          `arn:${partition}:ec2:${p.region}::image/${p.imageId}`,
        ],
      },
      {
        Sid: "TagOnlyAtLaunch",
        Effect: "Allow",
        Action: "ec2:CreateTags",
        Resource: instances,
        Condition: { StringEquals: { "ec2:CreateAction": "RunInstances", ...tagged } },
      },
      {
        Sid: "TerminateOnlyThisControllersInstances",
        Effect: "Allow",
        Action: "ec2:TerminateInstances",
        Resource: instances,
        Condition: { StringEquals: { "ec2:ResourceTag/steward:controller": p.controllerUuid } },
      },
      {
        Sid: "ListInstancesAndZones",
        Effect: "Allow",
        Action: ["ec2:DescribeInstances", "ec2:DescribeAvailabilityZones"],
        Resource: "*",
      },
    ],
  };
}

/** The 2nd, 3rd, … /24s of an IPv4 block (the first is left free), e.g. 10.42.1.0/24, 10.42.2.0/24, … of 10.42.0.0/16. */
export function subnetCidrs(block: string, n: number): string[] {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(block);
  const octets = m ? m.slice(1, 5).map(Number) : [];
  const bits = m ? Number(m[5]) : 99;
  if (!m || octets.some((o) => o > 255) || bits > 24 || 2 ** (24 - bits) <= n)
    throw new Error(`vpcCidr: an IPv4 block with room for ${n + 1} /24s, such as 10.42.0.0/16, not ${block}`);
  const address = octets.reduce((a, o) => a * 256 + o, 0);
  const base = address - (address % 2 ** (32 - bits));
  return Array.from({ length: n }, (_, i) => {
    const v = base + (i + 1) * 256;
    return `${[24, 16, 8, 0].map((shift) => Math.floor(v / 2 ** shift) % 256).join(".")}/24`;
  });
}
