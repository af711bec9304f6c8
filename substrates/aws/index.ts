export { AwsMachines } from "./machines";
export type { MachineInstance } from "./machines";
export { Ec2, GONE_STATES, LIVE_STATES, REPLICA_TAGS, TAGS, awsCredentialsOf, replicaInstanceName } from "./ec2";
export { bootstrapControllerOnAws, terminateControllerInstances } from "./bootstrap";
export type { AwsController, AwsControllerPlan } from "./bootstrap";
export type { AwsCredentials, AwsInstance, AwsPlacement } from "./ec2";
