// The client's errors. Every failure rejects with a PlatformError: PlatformApiError when the service answered
// with a non-2xx status, PlatformNetworkError when no answer came (network failure or timeout). An abort by
// the caller's own signal rejects with the signal's reason instead, as fetch does.
import type { ErrorBody, ErrorCode, Schema } from '@platform/api-types';

/**
 * The OAuth 2.0 error codes (RFC 6749 §5.2, RFC 8628 §3.5) of the device token endpoint, the one operation that
 * answers `{error, error_description}` instead of the contract's error body.
 */
export type OAuthErrorCode = Schema<'OAuthError'>['error'];

/**
 * The contract's error codes, the device token endpoint's OAuth 2.0 codes (`authorization_pending`, `slow_down`,
 * …), plus `unexpected_response` for a non-2xx answer without either body.
 */
export type PlatformErrorCode = ErrorCode | OAuthErrorCode | 'unexpected_response';

// `satisfies` ties the list to the contract: a code added to or removed from OAuthError fails the type check.
const oauthErrorCodes = {
  authorization_pending: true,
  slow_down: true,
  access_denied: true,
  expired_token: true,
  invalid_grant: true,
  unsupported_grant_type: true,
  invalid_request: true,
} satisfies Record<OAuthErrorCode, true>;

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
    if (isOAuthErrorBody(body)) {
      return new PlatformApiError({ ...common, code: body.error, message: body.error_description ?? body.error });
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

/**
 * A stream's caller lost access to it while it was open (token revoked or expired, session logged out, removed from
 * the workspace, role or scope no longer enough): the server said why in its `access_ended` event and closed it.
 * Not retried: reconnecting would be refused the same way.
 */
export class PlatformAccessEndedError extends PlatformError {
  override name = 'PlatformAccessEndedError';
  readonly reason: Schema<'StreamAccessEnded'>['reason'];

  constructor(ended: Schema<'StreamAccessEnded'>) {
    super(ended.message);
    this.reason = ended.reason;
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null || !('error' in body)) return false;
  const { error } = body;
  return (
    typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' && 'message' in error && typeof error.message === 'string'
  );
}

function isOAuthErrorBody(body: unknown): body is { error: OAuthErrorCode; error_description?: string } {
  if (typeof body !== 'object' || body === null || !('error' in body) || typeof body.error !== 'string') return false;
  if (!Object.hasOwn(oauthErrorCodes, body.error)) return false;
  return !('error_description' in body) || typeof body.error_description === 'string';
}

/** `Retry-After` in seconds: the contract sends an integer; HTTP also allows a date. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
