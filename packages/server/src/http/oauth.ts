// The OAuth 2.0 error body (RFC 6749 §5.2) of the device token endpoint, the API's one exception to the
// shared error body: standard OAuth clients poll that endpoint and read exactly `{error, error_description}`.
// The error middleware renders an OAuthError as such, with status 400.
import type { Schema } from '@platform/api-types';
import { ApiError } from './errors.ts';

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
