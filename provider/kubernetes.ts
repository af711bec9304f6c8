/**
 * @module provider/kubernetes
 * `steward/kubernetes`: the KubernetesController component, apart from the main entry so that only
 * programs that use it need `@pulumi/kubernetes`.
 */
export { KubernetesController } from "./kubernetes-controller";
export type { KubernetesControllerArgs } from "./kubernetes-controller";
