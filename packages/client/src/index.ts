// @platform/client: the typed client of the Platform Management API.
export { createPlatformClient, type PlatformClient, type PlatformClientOptions } from './client.ts';
export type { DeprecationHandler, DeprecationNotice } from './deprecation.ts';
export { type OAuthErrorCode, PlatformAccessEndedError, PlatformApiError, PlatformError, type PlatformErrorCode, PlatformNetworkError } from './errors.ts';
export type { EventStreamOptions } from './events.ts';
export type { InstallId, LogEvent, LogStreamOptions } from './logs.ts';
export type { OperationRoute, PlatformOperations } from './operations.ts';
export type { RetryOptions } from './retry.ts';
export type {
  BaseCallOptions,
  CallInit,
  JsonGetPaths,
  ListItem,
  ListOperationItem,
  ListOperations,
  ListPaths,
  OperationArgs,
  OperationInit,
  OperationResult,
  SuccessBody,
} from './types.ts';
export {
  generateWebhookSecret,
  type SignWebhookOptions,
  signWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookPayload,
  type WebhookSignatureHeaders,
  WebhookVerificationError,
  type WebhookVerificationFailure,
} from './webhooks.ts';
