export { AwsMachines } from "./machines";
export type { MachineInstance } from "./machines";
export { Ec2, GONE_STATES, LIVE_STATES, REPLICA_TAGS, TAGS, awsCredentialsOf, replicaInstanceName } from "./ec2";
export { awsHosting } from "./bootstrap";
export { EBS_MOUNT_ROOT, EbsVolumes, nitroDeviceName } from "./volumes";
export type { AwsCredentials, AwsImage, AwsInstance, AwsPlacement } from "./ec2";
export { INSTANCE_TYPES, hardwareOf, instanceTypeFor, instanceTypeInfo } from "./instance-types";
export type { InstanceTypeInfo } from "./instance-types";
export type { LaunchPlan } from "./machines";
