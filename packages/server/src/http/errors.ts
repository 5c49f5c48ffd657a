// The one error class. Everything that goes wrong (validation, auth, missing resources, database outages,
// bugs) ends as an ApiError rendered into the contract's error body by the error middleware.
import type { ErrorCode } from '@platform/api-types';

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

  constructor(status: number, code: ErrorCode, message: string, init: ApiErrorInit = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = init.param;
    this.suggestion = init.suggestion;
    this.details = init.details;
    this.headers = init.headers ?? {};
  }

  body(): { error: Record<string, unknown> } {
    const error: Record<string, unknown> = { code: this.code, message: this.message };
    if (this.param !== undefined) error.param = this.param;
    if (this.suggestion !== undefined) error.suggestion = this.suggestion;
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

export const notFound = (kind: string, id: string, param?: string): ApiError =>
  new ApiError(404, 'not_found', `${kind} ${id} not found.`, {
    ...(param === undefined ? {} : { param }),
    suggestion: `Check the id; ${kind.toLowerCase()}s of workspaces you are not a member of are not visible.`,
  });

export const validationError = (param: string, message: string, suggestion?: string): ApiError =>
  new ApiError(422, 'validation_error', message, { param, ...(suggestion === undefined ? {} : { suggestion }) });

export const conflict = (message: string, suggestion: string, details?: unknown, param?: string): ApiError =>
  new ApiError(409, 'conflict', message, { suggestion, ...(details === undefined ? {} : { details }), ...(param === undefined ? {} : { param }) });

export const unauthorized = (message: string, suggestion: string): ApiError =>
  new ApiError(401, 'unauthorized', message, {
    suggestion,
    headers: { 'WWW-Authenticate': 'Bearer realm="platform", error="invalid_token"' },
  });
