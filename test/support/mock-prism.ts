// A Prism mock for the whole test file: started before its tests, stopped after them.
import { afterAll, beforeAll } from 'vitest';
import { type PrismServer, startPrism } from './prism.ts';

export function useMockPrism(): { readonly url: string } {
  let prism: PrismServer | undefined;
  beforeAll(async () => {
    prism = await startPrism({ mode: 'mock', verbose: 'warn' });
  });
  afterAll(async () => {
    await prism?.stop();
  });
  return {
    get url() {
      if (!prism) throw new Error('the mock is not started yet');
      return prism.url;
    },
  };
}
