export { AwsMachines } from "./machines";
export type { MachineInstance } from "./machines";
export { Ec2, GONE_STATES, LIVE_STATES, TAGS, awsCredentialsOf } from "./ec2";
export type { AwsCredentials, AwsInstance, AwsPlacement } from "./ec2";
