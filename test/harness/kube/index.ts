/** The fake Kubernetes API server and its parts (see fake-kube-api.ts). */
export { FakeKubeApi } from "./fake-kube-api";
export type { FakeKubeApiOptions, FakeKubeRequest } from "./fake-kube-api";
export { SimpleKubelet, podReady, setCondition } from "./kubelet";
export type { Kubelet, KubeletHost, SimpleKubeletOptions } from "./kubelet";
export { ApiState } from "./state";
export type { StoreEvent } from "./state";
export { KINDS, kindFor } from "./kinds";
export type { KindInfo, KubeObject } from "./kinds";
export { KubeStatusError } from "./status";
