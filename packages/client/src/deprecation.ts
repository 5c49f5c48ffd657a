// A deprecated operation or parameter announces itself in its answers (`Deprecation`, RFC 9745; `Sunset`, RFC 8594;
// `Link`s to its docs and its successor). The client tells its user once per process for each operation (once per
// handler given: the CLI gives one per run), so a program learns while there is time to move, without a warning
// on every call.

/** What an answer said of its operation's deprecation. */
export interface DeprecationNotice {
  /** The operation as called, e.g. `GET /v1/quotas/{metric}`. */
  operation: string;
  /** When it is (or will be) deprecated. */
  since: Date | undefined;
  /** When it stops answering, if the service set a date. */
  sunset: Date | undefined;
  /** The documentation of the deprecation (`rel="deprecation"`), absolute. */
  docs: string | undefined;
  /** The documentation of what replaces it (`rel="successor-version"`), absolute. */
  successor: string | undefined;
  /** All of it in one sentence, for a log or a terminal. */
  message: string;
}

export type DeprecationHandler = (notice: DeprecationNotice) => void;

/** Per handler, the operations it was told of already, whatever client told it. */
const told = new WeakMap<DeprecationHandler, Set<string>>();

const day = (date: Date) => date.toISOString().slice(0, 10);

/** The notice an answer to a request sent to `url` carries, or undefined when it carries none. */
export function deprecationNotice(operation: string, response: Response, url: string): DeprecationNotice | undefined {
  const header = response.headers.get('deprecation');
  if (header === null) return undefined;
  const seconds = /^@(-?\d+)$/.exec(header.trim())?.[1];
  const since = seconds === undefined ? undefined : new Date(Number(seconds) * 1000);
  const sunsetHeader = response.headers.get('sunset');
  const sunset = sunsetHeader === null || Number.isNaN(Date.parse(sunsetHeader)) ? undefined : new Date(sunsetHeader);
  const links = new Map<string, string>();
  for (const [, target, rel] of (response.headers.get('link') ?? '').matchAll(/<([^>]*)>[^,]*?;\s*rel="?([^";,]+)"?/g)) {
    try {
      links.set(rel!, new URL(target!, url).toString());
    } catch {
      // not a URL: left out
    }
  }
  const docs = links.get('deprecation');
  const successor = links.get('successor-version');
  const parts = [`${operation} is deprecated${since ? ` since ${day(since)}` : ''}`];
  if (sunset) parts.push(`it stops answering on ${day(sunset)}`);
  if (successor) parts.push(`use its successor: ${successor}`);
  else if (docs) parts.push(`see ${docs}`);
  return { operation, since, sunset, docs, successor, message: `${parts.join('; ')}.` };
}

/** Tells `handler` of an answer's deprecation, the first time this process meets it for the operation. */
export function noticeDeprecation(operation: string, url: string, response: Response, handler: DeprecationHandler): void {
  let operations = told.get(handler);
  if (operations?.has(operation) || !response.headers.has('deprecation')) return;
  const notice = deprecationNotice(operation, response, url);
  if (!notice) return;
  if (!operations) told.set(handler, (operations = new Set()));
  operations.add(operation);
  handler(notice);
}

/** The default: a warning on the console (stderr in Node). */
export const warnOnConsole: DeprecationHandler = (notice) => console.warn(`@platform/client: ${notice.message}`);
