// What `pnpm mock` does to Prism's dynamic answers (`Prefer: dynamic=true`), which json-schema-faker fills field by
// field: each value valid on its own, the record as a whole not. Three things a front end would trip over are mended
// here rather than with `x-faker` hints in the contract, which would describe the faker instead of the API:
//   - a record's `*_at` moments (`updated_at`, `read_at`, `expires_at`, …) never come before its `created_at`;
//   - a page that says `has_more` holds records (an empty one says no more follows);
//   - free-text messages (status messages, notification titles and bodies, error messages and suggestions, …) read
//     as the API's would instead of lorem ipsum.
// Examples (`Prefer: example=…`, the default) are served as written.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isRecord = (value: Json | undefined): value is { [key: string]: Json } => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Free-text fields of the contract, and what each might say. */
const messages: Record<string, string[]> = {
  // Said of a record that failed (`status` failed or ERROR), and of one on its way.
  failure_message: [
    'Helm release wordpress failed: image pull back-off for docker.io/bitnami/wordpress:6.7.',
    'The control plane was not Ready within 900 seconds.',
    'Argo CD could not sync the release: chart version 19.6.1 not found.',
  ],
  status_message: ['Waiting for the control plane to become Ready.', 'Installing 2 of 3 helm releases.', "Deleting the cluster's machines."],
  title: ['Cluster prod-eu is running', 'Install of Web Shop failed', 'Machine prod-eu-worker-2 is ready', 'Managed clusters quota reached'],
  body: [
    'The control plane of prod-eu is ready; add machines to run workloads.',
    'Helm release wordpress failed: image pull back-off. Check the image and roll back or update the install.',
    'The node joined the cluster and serves workloads.',
    'The workspace uses all the managed clusters its plan allows. Delete one or upgrade the plan to create more.',
  ],
  message: ['The cluster does not exist or is not visible to the caller.', 'The request body is not valid: name is too long.', 'The token was revoked.'],
  suggestion: ['List the clusters to find its id.', 'Use at most 63 characters.', 'Sign in again with platform login.'],
  error_description: ['The user has not approved the request yet.', 'The device code expired; start the sign-in again.'],
  last_error: ['The endpoint answered 503 Service Unavailable.', 'The endpoint did not answer within 10 seconds.', 'Connection refused.'],
  disabled_reason: ['The endpoint failed every delivery for 5 days.'],
  description: ['Deploy notifications for the ops channel', 'Billing system', 'Staging receiver'],
  custom_description: ['A WordPress shop with its database.', 'Internal wiki for the support team.'],
  line: ['GET /healthz 200 1.2ms', 'Listening on 0.0.0.0:8080', 'Connected to the database in 35 ms', 'Worker started: 4 threads'],
};

// A stable choice for a value, so the same answer always reads the same.
function pick(options: string[], seed: string): string {
  let hash = 0;
  for (const char of seed) hash = (hash * 31 + char.charCodeAt(0)) | 0;
  return options[Math.abs(hash) % options.length] as string;
}

function mend(value: Json): Json {
  if (Array.isArray(value)) return value.map(mend);
  if (!isRecord(value)) return value;
  const out: { [key: string]: Json } = {};
  for (const [key, field] of Object.entries(value)) {
    const failed = key === 'status_message' && /^(failed|error)$/i.test(String(value.status));
    const options = messages[failed ? 'failure_message' : key];
    out[key] = options && typeof field === 'string' ? pick(options, field) : mend(field);
  }
  const created = out.created_at;
  if (typeof created === 'number') {
    for (const [key, field] of Object.entries(out)) {
      // Later by up to a day: no record changes, is read or expires before it exists.
      if (key.endsWith('_at') && typeof field === 'number' && field < created) out[key] = created + ((created - field) % 86_400);
    }
  }
  const pagination = out.pagination;
  if (Array.isArray(out.data) && out.data.length === 0 && isRecord(pagination) && pagination.has_more === true) {
    out.pagination = { ...pagination, has_more: false };
  }
  return out;
}

/** Prism's dynamic JSON answer, made consistent as described above. */
export function consistentMockData(body: unknown): unknown {
  return mend(body as Json);
}

/** Whether the request asks Prism for dynamic data (`Prefer: dynamic=true`). */
export function asksForDynamicData(prefer: string | string[] | undefined): boolean {
  return [prefer ?? []]
    .flat()
    .join(',')
    .split(/[,;]/)
    .some((preference) => preference.trim().toLowerCase() === 'dynamic=true');
}
