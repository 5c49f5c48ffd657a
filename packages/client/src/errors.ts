// The client's errors. Every failure rejects with a PlatformError: PlatformApiError when the service answered
// with a non-2xx status, PlatformNetworkError when no answer came (network failure or timeout). An abort by
// the caller's own signal rejects with the signal's reason instead, as fetch does.
import type { ErrorBody, ErrorCode } from '@platform/api-types';

/** The contract's error codes, plus `unexpected_response` for a non-2xx answer without the contract's error body. */
export type PlatformErrorCode = ErrorCode | 'unexpected_response';

/** The base class of every error the client raises. Thrown as such for a malformed success body. */
export class PlatformError extends Error {
  override name = 'PlatformError';
}

/** The service answered with a non-2xx status; the fields are those of the contract's error body. */
export class PlatformApiError extends PlatformError {
  override name = 'PlatformApiError';
  readonly status: number;
  readonly code: PlatformErrorCode;
  readonly param: string | undefined;
  readonly suggestion: string | undefined;
  readonly details: unknown;
  /** The response's `X-Request-Id`: quote it when asking for support. */
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying, from `Retry-After` (429 and 503). */
  readonly retryAfter: number | undefined;

  constructor(init: {
    status: number;
    code: PlatformErrorCode;
    message: string;
    param?: string | undefined;
    suggestion?: string | undefined;
    details?: unknown;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.param = init.param;
    this.suggestion = init.suggestion;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }

  /** Builds the error from a response and its body, as openapi-fetch returns it (parsed JSON, text or undefined). */
  static fromResponse(response: Response, body: unknown): PlatformApiError {
    const common = {
      status: response.status,
      requestId: response.headers.get('x-request-id') ?? undefined,
      retryAfter: parseRetryAfter(response.headers.get('retry-after')),
    };
    if (isErrorBody(body)) {
      const { code, message, param, suggestion, details } = body.error;
      return new PlatformApiError({ ...common, code, message, param, suggestion, details });
    }
    // A proxy or load balancer may answer without the contract's body: keep what it sent in `details`.
    const statusLine = `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
    const details = body === '' ? undefined : body;
    return new PlatformApiError({ ...common, code: 'unexpected_response', message: statusLine, details });
  }
}

/** No answer came: the network failed or the attempt timed out (`timedOut`). The cause is the underlying error. */
export class PlatformNetworkError extends PlatformError {
  override name = 'PlatformNetworkError';
  readonly timedOut: boolean;

  constructor(message: string, options: { timedOut: boolean; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.timedOut = options.timedOut;
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null || !('error' in body)) return false;
  const { error } = body;
  return (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string' &&
    'message' in error &&
    typeof error.message === 'string'
  );
}

/** `Retry-After` in seconds: the contract sends an integer; HTTP also allows a date. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
