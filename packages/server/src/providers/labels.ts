// Label values as the cloud stores them. Hetzner's rule (its API reference's "Labels") is Kubernetes' too: at most 63
// of [A-Za-z0-9._-], starting and ending alphanumeric.

/** Each run of other characters becomes one dot (`compute://mch_01h…` → `compute.mch_01h…`). */
export function labelValue(value: string): string {
  return value
    .replace(/[^A-Za-z0-9._-]+/g, '.')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}
