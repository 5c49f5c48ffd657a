// Deprecation that announces itself. An operation the contract marks `deprecated: true` answers every request with
// `Deprecation` (RFC 9745: the moment it is deprecated, `@<Unix seconds>`), and a parameter so marked does for each
// request that sends it. Its extensions say the rest: `x-deprecated-at` (required: the date of `Deprecation`),
// `x-sunset` (the date it stops answering: `Sunset`, RFC 8594) and `x-successor` (the operationId that replaces an
// operation, or the parameter that replaces a parameter). `Link` points at the reference docs, which say it too:
// `rel="deprecation"` (RFC 9745 §3) at the operation, `rel="successor-version"` (RFC 5829) at its successor.

/** What the contract says of a deprecated operation or parameter. */
export interface Deprecation {
  /** Unix seconds. */
  since: number;
  sunset?: number;
  successor?: string;
}

interface Marked {
  deprecated?: boolean;
  'x-deprecated-at'?: unknown;
  'x-sunset'?: unknown;
  'x-successor'?: unknown;
}

const seconds = (value: unknown, where: string): number => {
  const time = typeof value === 'string' && /^\d{4}-\d{2}-\d{2}(T[\d:.]+Z)?$/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(time)) throw new Error(`${where} is not a date (YYYY-MM-DD): ${JSON.stringify(value)}`);
  return time / 1000;
};

/** The deprecation a contract object declares; undefined when it is not deprecated. `where` names it in errors. */
export function deprecationOf(node: Marked, where: string): Deprecation | undefined {
  if (node.deprecated !== true) return undefined;
  if (node['x-deprecated-at'] === undefined) throw new Error(`${where} is deprecated without x-deprecated-at (the date its Deprecation header gives)`);
  const deprecation: Deprecation = { since: seconds(node['x-deprecated-at'], `${where}: x-deprecated-at`) };
  if (node['x-sunset'] !== undefined) {
    deprecation.sunset = seconds(node['x-sunset'], `${where}: x-sunset`);
    if (deprecation.sunset < deprecation.since) throw new Error(`${where}: x-sunset is before x-deprecated-at`);
  }
  if (typeof node['x-successor'] === 'string') deprecation.successor = node['x-successor'];
  return deprecation;
}

/** Where the reference docs show an operation (Redoc's deep link), as the server serves them. */
export const docsLink = (operationId: string) => `/docs#operation/${operationId}`;

/**
 * The headers an answer carries for a deprecated operation (`successorOperation`: whether `successor` names an
 * operation, to link to, rather than a parameter).
 */
export function deprecationHeaders(operationId: string, deprecation: Deprecation, successorOperation: boolean): Record<string, string> {
  const links = [`<${docsLink(operationId)}>; rel="deprecation"; type="text/html"`];
  if (deprecation.successor && successorOperation) links.push(`<${docsLink(deprecation.successor)}>; rel="successor-version"; type="text/html"`);
  const headers: Record<string, string> = { Deprecation: `@${Math.floor(deprecation.since)}`, Link: links.join(', ') };
  if (deprecation.sunset !== undefined) headers.Sunset = new Date(deprecation.sunset * 1000).toUTCString();
  return headers;
}

/** The headers of deprecation, lower case: declared by `deprecated: true`, not on each response. */
export const deprecationHeaderNames = new Set(['deprecation', 'sunset', 'link']);
