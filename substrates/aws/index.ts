export { AwsMachines } from "./machines";
export type { MachineInstance } from "./machines";
export { Ec2, GONE_STATES, LIVE_STATES, REPLICA_TAGS, TAGS, awsCredentialsOf, replicaInstanceName } from "./ec2";
export type { AwsCredentials, AwsInstance, AwsPlacement } from "./ec2";
