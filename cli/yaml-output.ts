/** YAML output for `--format yaml`, loaded on first use: the YAML library costs most of a fast command's start. */
import type * as Yaml from "yaml";

export function stringify(value: unknown): string {
  return (require("yaml") as typeof Yaml).stringify(value);
}
