// The one error class, used by every layer and owned by none. Everything that goes wrong (validation, auth,
// missing resources, database outages, bugs) ends as an ApiError rendered into the contract's error body by the
// error middleware (http/error-body.ts). The device token endpoint's OAuth 2.0 error body is the one exception.
import type { ErrorCode, Schema } from '@platform/api-types';

/** The HTTP status of each error code (the contract's error table), in one place; a new code fails the type check until it has one. */
export const STATUS_OF = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  quota_exceeded: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_error: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const satisfies Record<ErrorCode, number>;

/** How much of a caller's value an error message repeats: enough to recognise it, never the whole of a huge one. */
const SHOWN_CHARACTERS = 64;
/** Longest message an error body carries (a net under every message that embeds values). */
const MESSAGE_CHARACTERS = 512;

/** A message or param as an error body carries it: at most MESSAGE_CHARACTERS (a net under every embedded value). */
export const clipped = (text: string): string => (text.length > MESSAGE_CHARACTERS ? `${text.slice(0, MESSAGE_CHARACTERS)}…` : text);

/** A caller-supplied value as an error message shows it: at most its first 64 characters. */
export const shown = (value: string): string => (value.length > SHOWN_CHARACTERS ? `${value.slice(0, SHOWN_CHARACTERS)}…` : value);

export interface ApiErrorInit {
  param?: string;
  suggestion?: string;
  details?: unknown;
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly param: string | undefined;
  readonly suggestion: string | undefined;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, init: ApiErrorInit = {}) {
    super(message);
    this.status = STATUS_OF[code];
    this.code = code;
    this.param = init.param;
    this.suggestion = init.suggestion;
    this.details = init.details;
    this.headers = init.headers ?? {};
  }

  body(): { error: Record<string, unknown> } {
    const error: Record<string, unknown> = { code: this.code, message: clipped(this.message) };
    // A param can hold a caller's property name (an unknown field): shown shortened like any caller value.
    if (this.param !== undefined) error.param = clipped(this.param);
    if (this.suggestion !== undefined) error.suggestion = this.suggestion;
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

/** Where a kind of resource is not one a workspace holds, what its 404 suggests instead of the workspace hint. */
const NOT_FOUND_HINTS: Readonly<Record<string, string>> = {
  Workspace: 'Check the id with GET /v1/workspaces; a workspace you are not a member of is not visible.',
  Token: 'Check the id with GET /v1/user/tokens; only your own tokens are visible.',
  Session: 'Check the id with GET /v1/user/sessions; only your own sessions are visible.',
  Notification: 'Check the id with GET /v1/notifications; only your own notifications are visible.',
  Member: 'Check the user id with GET /v1/workspaces/{workspaceId}/members.',
  Invitation: 'Check the id with GET /v1/workspaces/{workspaceId}/invitations, or GET /v1/user/invitations for those sent to you.',
  'Quota metric': 'Use a metric GET /v1/quotas lists, with its slash sent as %2F (kaas%2Fclusters).',
};

/** A resource that does not exist or is not visible to the caller; `suggestion` replaces the default hint. */
export const notFound = (kind: string, id: string, param?: string, suggestion?: string): ApiError =>
  new ApiError('not_found', `${kind} ${shown(id)} not found.`, {
    ...(param === undefined ? {} : { param }),
    suggestion: suggestion ?? NOT_FOUND_HINTS[kind] ?? `Check the id; ${kind.toLowerCase()}s of workspaces you are not a member of are not visible.`,
  });

export const validationError = (param: string, message: string, suggestion?: string): ApiError =>
  new ApiError('validation_error', message, { param, ...(suggestion === undefined ? {} : { suggestion }) });

export const conflict = (message: string, suggestion: string, details?: unknown, param?: string): ApiError =>
  new ApiError('conflict', message, { suggestion, ...(details === undefined ? {} : { details }), ...(param === undefined ? {} : { param }) });

/**
 * 401 with its Bearer challenge (RFC 6750 §3): `error="invalid_token"` says why a token was refused; a request
 * that sent none gets the bare challenge (§3.1: no error code when no authentication was attempted).
 */
export const unauthorized = (message: string, suggestion: string, { tokenSent = true } = {}): ApiError =>
  new ApiError('unauthorized', message, {
    suggestion,
    headers: { 'WWW-Authenticate': tokenSent ? 'Bearer realm="platform", error="invalid_token"' : 'Bearer realm="platform"' },
  });

// The OAuth 2.0 error body (RFC 6749 §5.2) of the device token endpoint, the API's one exception to the shared
// error body: standard OAuth clients poll that endpoint and read exactly `{error, error_description}`. The error
// middleware renders an OAuthError as such, with status 400.
export type OAuthErrorCode = Schema<'OAuthError'>['error'];

export class OAuthError extends Error {
  readonly status = 400;
  readonly code: OAuthErrorCode;

  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.code = code;
  }

  body(): Schema<'OAuthError'> {
    return { error: this.code, error_description: this.message };
  }

  /**
   * A request the endpoint cannot read (wrong content type, malformed body, a parameter missing or invalid):
   * `invalid_request`, with the shared error's message as the description. Other errors pass unchanged.
   */
  static fromRequestError(error: unknown): unknown {
    if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429) {
      return new OAuthError('invalid_request', error.message);
    }
    return error;
  }
}
