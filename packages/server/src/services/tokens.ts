// Tokens are a resource (resources/tokens.ts); authentication and tests still import them from here.
export * from '../resources/tokens.ts';
