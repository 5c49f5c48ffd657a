// With VALIDATE_RESPONSES (always in tests): every answer of an operation, errors included, must be one its
// contract declares (status, headers, body); one that is not becomes a 500 naming what broke, so a test that
// meets it fails.
import type { Middleware } from 'koa';
import { type Contract, enforceDeclaredResponse } from './contract.ts';

export function declaredResponses(contract: Contract): Middleware {
  return async (ctx, next) => {
    await next();
    // A stream was checked before it started; its head is sent.
    if (ctx.respond !== false) enforceDeclaredResponse(contract, ctx);
  };
}
