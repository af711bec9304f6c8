/**
 * The KubernetesController component's seed: the controller's CA, admin password and uuid, made once
 * (by the controller's own code) before any object exists, kept secret in the state. The seed Secret
 * and the finishing step are made from it; a new name is a new controller (replace).
 */
import { kubernetes } from "../../substrates";
import { Failures } from "./checks";

export interface KubernetesSeedInputs {
  name: string;
}
export interface KubernetesSeedOutputs extends KubernetesSeedInputs, kubernetes.KubernetesControllerSeed {}

export const kubernetesSeedProvider = {
  async check(_olds: KubernetesSeedInputs, news: KubernetesSeedInputs) {
    const f = new Failures();
    f.name("name", news.name, "controller name");
    return { inputs: news, failures: f.list };
  },
  async diff(_id: string, olds: KubernetesSeedOutputs, news: KubernetesSeedInputs) {
    const replaces = olds.name !== news.name ? ["name"] : [];
    return { changes: replaces.length > 0, replaces, deleteBeforeReplace: false };
  },
  async create(inputs: KubernetesSeedInputs) {
    const seed = await kubernetes.newKubernetesControllerSeed(inputs.name);
    return { id: seed.uuid, outs: { ...inputs, ...seed } satisfies KubernetesSeedOutputs };
  },
  async read(id: string, props: KubernetesSeedOutputs) {
    return { id, props };
  },
  async update(_id: string, _olds: KubernetesSeedOutputs, news: KubernetesSeedInputs) {
    return { outs: news };
  },
  async delete() {
    /* nothing outside the state */
  },
};
