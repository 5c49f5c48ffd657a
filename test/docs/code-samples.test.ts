// The request samples `pnpm gen` puts in the docs (scripts/code-samples.ts): one curl and one TypeScript sample per
// operation of the contract, and every TypeScript sample compiles against the client (tsc, with the client's own
// types), so a sample cannot drift from the client's call shape. A deliberately wrong sample beside them proves
// the compiler is really checking.
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { codeSamples, sampleInput, serverUrl, withCodeSamples } from '../../scripts/code-samples.ts';
import { isObject, listOperations, loadDocument } from '../support/openapi.ts';
import { repoRoot } from '../support/prism.ts';

const run = promisify(execFile);
const doc = loadDocument();
const operations = listOperations(doc);
const samplesOf = (operationId: string) => {
  const operation = operations.find((candidate) => candidate.operationId === operationId);
  if (!operation) throw new Error(`the contract has no ${operationId}`);
  const pathItem = doc.paths[operation.path];
  if (!pathItem) throw new Error(`no path item ${operation.path}`);
  return codeSamples(sampleInput(doc, operation.path, operation.method, pathItem, operation.object));
};
const source = (operationId: string, label: string) => samplesOf(operationId).find((sample) => sample.label === label)?.source;

// Inside the repository so that `@platform/client` resolves as it does for any workspace code.
const scratch = join(repoRoot, 'test-results', 'code-samples');
afterAll(() => rm(scratch, { recursive: true, force: true }));

describe('request samples', () => {
  it('every operation gets a curl and a TypeScript client sample, on a copy of the document', () => {
    const withSamples = withCodeSamples(doc);
    const paths = isObject(withSamples.paths) ? withSamples.paths : {};
    for (const operation of operations) {
      const pathItem = paths[operation.path];
      const object = isObject(pathItem) ? pathItem[operation.method] : undefined;
      const samples = isObject(object) ? object['x-codeSamples'] : undefined;
      const labels = Array.isArray(samples) ? samples.map((sample) => (isObject(sample) ? sample.label : sample)) : samples;
      expect(labels, operation.operationId).toEqual(['curl', 'TypeScript client']);
    }
    // The bundled document itself is left as it is.
    expect(JSON.stringify(doc)).not.toContain('x-codeSamples');
  });

  it('shows the required parameters, the workspace header and the page size, with the contract’s examples', () => {
    expect(source('listClusters', 'curl')).toBe(
      [
        "curl 'https://api.platform.example/v1/clusters?limit=50' \\",
        '  -H "Authorization: Bearer $PLATFORM_TOKEN" \\',
        "  -H 'X-Workspace-Id: ws_01jd2x8k4q3m7n5p9r6s2t8v0w'",
      ].join('\n'),
    );
    expect(source('listClusters', 'TypeScript client')).toBe(
      [
        "import { createPlatformClient } from '@platform/client';",
        '',
        'const api = createPlatformClient({',
        "  baseUrl: 'https://api.platform.example',",
        '  token: process.env.PLATFORM_TOKEN,',
        "  workspaceId: 'ws_01jd2x8k4q3m7n5p9r6s2t8v0w',",
        '});',
        'const result = await api.listClusters({ limit: 50 });',
        'console.log(result);',
      ].join('\n'),
    );
    // A path parameter is encoded in the URL; a form body goes as form fields; no token where none is taken.
    expect(source('deleteMachine', 'curl')).toContain("-X DELETE 'https://api.platform.example/v1/compute/machines/compute%3A%2F%2Fmch_");
    const poll = source('pollDeviceToken', 'curl') ?? '';
    expect(poll).toContain("--data-urlencode 'grant_type=urn:ietf:params:oauth:grant-type:device_code'");
    expect(poll).not.toContain('Authorization');
    expect(source('listMachines', 'curl')).toContain('cluster_id=cl_');
    // The event stream: curl without buffering, the client's stream method.
    expect(source('streamInstallLogs', 'curl')).toMatch(/^curl -N .*\n.*\n.*\n {2}-H 'Accept: text\/event-stream'$/);
    expect(source('streamInstallLogs', 'TypeScript client')).toContain("for await (const event of api.streamInstallLogs('ins_");
  });

  it('calls the contract’s first server, a concrete public one, with its variables at their defaults', () => {
    // Generators default to `servers[0]`: a deployment's address, not a developer's machine, and no template (a
    // generator makes a broken default of one).
    const first = Array.isArray(doc.servers) ? doc.servers[0] : undefined;
    expect(isObject(first) ? first.url : first).toBe('https://api.platform.example');
    expect(serverUrl({ url: '{base_url}/v1', variables: { base_url: { default: 'https://api.platform.example' } } })).toBe('https://api.platform.example/v1');
    expect(() => serverUrl({ url: '{base_url}', variables: {} })).toThrow('server variable base_url has no default');
    for (const sample of samplesOf('listClusters')) expect(sample.source).not.toContain('{base_url}');
  });

  it('every TypeScript sample compiles against the client', { timeout: 120_000 }, async () => {
    await rm(scratch, { recursive: true, force: true });
    await mkdir(scratch, { recursive: true });
    const files: string[] = [];
    for (const operation of operations) {
      const sample = source(operation.operationId, 'TypeScript client');
      if (!sample) throw new Error(`${operation.operationId} has no TypeScript sample`);
      files.push(`${operation.operationId}.ts`);
      await writeFile(join(scratch, files.at(-1) ?? ''), `${sample}\n`);
    }
    // The control: a sample calling an operation the contract does not have must not compile.
    const wrong = (source('listClusters', 'TypeScript client') ?? '').replace('api.listClusters(', 'api.listCluster(');
    await writeFile(join(scratch, 'wrong.ts'), `${wrong}\n`);
    await writeFile(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { lib: ['ES2023', 'DOM', 'DOM.Iterable'] }, files: [...files, 'wrong.ts'] }),
    );
    const result = await run(join(repoRoot, 'node_modules', '.bin', 'tsc'), ['-p', join(scratch, 'tsconfig.json')], { cwd: repoRoot }).then(
      () => ({ output: '' }),
      (error: { stdout?: string; stderr?: string }) => ({ output: `${error.stdout ?? ''}${error.stderr ?? ''}` }),
    );
    const failing = new Set([...result.output.matchAll(/^(?:[^\s(]*\/)?([^\s/(]+\.ts)\(\d+,\d+\): error/gm)].map(([, file]) => file));
    expect([...failing], result.output).toEqual(['wrong.ts']);
  });
});
