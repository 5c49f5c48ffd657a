// A setup file of every test project: after a file's tests (and its servers' shutdown), anything its in-process
// test servers logged that looks like a credential fails the file (support/server-logs.ts).
import { afterAll } from 'vitest';
import { takeLoggedSecrets } from './server-logs.ts';

afterAll(() => {
  const found = takeLoggedSecrets();
  if (found.length > 0) throw new Error(`The test servers logged what looks like a credential:\n${found.join('\n')}`);
});
