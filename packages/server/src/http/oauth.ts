// Moved to ../errors.ts (used by every layer); this re-export keeps older imports working until they are updated.
export { OAuthError, type OAuthErrorCode } from '../errors.ts';
