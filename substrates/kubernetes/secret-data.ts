/**
 * Changing a Secret's keys in place (the enrolment Secret's tokens and its bootstrapped mark) while
 * others write it too: read, change, replace at the read resourceVersion, again on a conflict.
 */
import { StewardError } from "../../api/core";
import type { KubeApi } from "./kube-api";
import { isConflict } from "./kube-api";
import { KUBE_RESOURCES } from "./resources";

/**
 * Applies `change` to the Secret's data (base64 values) and writes it back; `change` answers
 * undefined when there is nothing to write. A Secret that keeps changing under us is a retryable conflict.
 */
export async function updateSecretData(
  api: KubeApi,
  namespace: string,
  name: string,
  change: (data: Record<string, string>) => Record<string, string> | undefined,
): Promise<void> {
  const R = KUBE_RESOURCES;
  for (let attempt = 0; attempt < 5; attempt++) {
    const secret = await api.find(R.secrets, name, { namespace });
    if (!secret)
      throw new StewardError(
        "not-found",
        `the Secret ${namespace}/${name} is missing (made by steward bootstrap kubernetes:)`,
      );
    const data = change({ ...secret.data });
    if (data === undefined) return;
    try {
      await api.replace(R.secrets, {
        ...secret,
        data,
        metadata: { ...secret.metadata!, resourceVersion: secret.metadata!.resourceVersion! },
      });
      return;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new StewardError("conflict", `the Secret ${namespace}/${name} kept changing; will try again`, {
    retryable: true,
  });
}
