export { AwsMachines, TAGS } from "./machines";
export type { AwsCredentials, AwsInstance, AwsPlacement } from "./machines";
