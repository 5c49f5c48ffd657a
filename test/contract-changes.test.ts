// The compatibility gate's rules (scripts/contract-diff.ts), one by one, on a small contract: what breaks a client
// of /v1 and what it may take, and what the gate says of a release and of main (scripts/contract-changes.ts).
// test/contract-gate.test.ts runs the whole gate on edited copies of the real contract's YAML.
import { describe, expect, it } from 'vitest';
import { judge } from '../scripts/contract-changes.ts';
import { type Change, compareContracts } from '../scripts/contract-diff.ts';

type Node = Record<string, any>;

/** One operation with a body, a query parameter and a response, one webhook, and the schemas they name. */
function contract(): Node {
  return {
    openapi: '3.1.0',
    info: { title: 't', version: '2.0.0' },
    security: [{ token: [] }],
    paths: {
      '/v1/clusters/{clusterId}': {
        post: {
          operationId: 'updateCluster',
          parameters: [
            { name: 'clusterId', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'dry_run', in: 'query', schema: { type: 'boolean' } },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ClusterUpdate' } } } },
          responses: {
            '200': {
              description: 'ok',
              headers: { 'X-Request-Id': { schema: { type: 'string' } } },
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Cluster' } } },
            },
            '404': { description: 'missing', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          },
        },
      },
    },
    webhooks: {
      'cluster.created': {
        post: {
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ClusterCreatedEvent' } } } },
          responses: { '2XX': { description: 'taken' } },
        },
      },
    },
    components: {
      schemas: {
        ClusterUpdate: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: { name: { type: 'string', maxLength: 63 }, size: { type: 'string', enum: ['small', 'large'] } },
        },
        Cluster: {
          type: 'object',
          required: ['id', 'name', 'status', 'message'],
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            status: { $ref: '#/components/schemas/ClusterStatus' },
            message: { type: 'string' },
          },
        },
        ClusterStatus: { type: 'string', enum: ['PROVISIONING', 'RUNNING', 'DELETING'] },
        EventType: { type: 'string', 'x-extensible-enum': true, enum: ['cluster.created', 'cluster.failed'] },
        Event: {
          type: 'object',
          required: ['type', 'object', 'created_at'],
          properties: {
            type: { $ref: '#/components/schemas/EventType' },
            created_at: { type: 'integer' },
            object: { anyOf: [{ $ref: '#/components/schemas/Cluster' }, { $ref: '#/components/schemas/Error' }] },
          },
        },
        ClusterCreatedEvent: {
          allOf: [
            { $ref: '#/components/schemas/Event' },
            { type: 'object', properties: { type: { const: 'cluster.created' }, object: { $ref: '#/components/schemas/Cluster' } } },
          ],
        },
        Error: { type: 'object', required: ['code'], properties: { code: { type: 'string' } } },
      },
    },
  };
}

const operation = (document: Node) => document.paths['/v1/clusters/{clusterId}'].post;
const schemas = (document: Node) => document.components.schemas;

/** The changes `edit` makes to the contract. */
function changesOf(edit: (document: Node) => void): Change[] {
  const now = contract();
  edit(now);
  return compareContracts(contract() as never, now as never);
}
const breaking = (edit: (document: Node) => void) => changesOf(edit).filter((change) => change.breaking);

describe('the gate breaks on', () => {
  it.each<[string, (document: Node) => void, RegExp, RegExp]>([
    ['a removed operation', (d) => delete d.paths['/v1/clusters/{clusterId}'].post, /^POST \/v1\/clusters\/\{clusterId\}$/, /operation updateCluster removed/],
    ['a renamed operationId', (d) => (operation(d).operationId = 'editCluster'), /^POST /, /operationId updateCluster renamed to editCluster/],
    [
      'a renamed path parameter',
      (d) => {
        const item = d.paths['/v1/clusters/{clusterId}'];
        delete d.paths['/v1/clusters/{clusterId}'];
        d.paths['/v1/clusters/{id}'] = item;
        item.post.parameters[0].name = 'id';
      },
      /^POST \/v1\/clusters\/\{clusterId\}$/,
      /path parameter \{clusterId\} renamed to \{id\}/,
    ],
    ['a renamed query parameter', (d) => (operation(d).parameters[1].name = 'dryRun'), /^POST /, /query parameter dry_run removed/],
    [
      'a new required query parameter',
      (d) => operation(d).parameters.push({ name: 'force', in: 'query', required: true, schema: { type: 'boolean' } }),
      /^POST /,
      /new required query parameter force/,
    ],
    ['a parameter made required', (d) => (operation(d).parameters[1].required = true), /query parameter dry_run$/, /now required/],
    [
      'a new required request property',
      (d) => {
        schemas(d).ClusterUpdate.properties.region = { type: 'string' };
        schemas(d).ClusterUpdate.required.push('region');
      },
      /request body application\/json: ClusterUpdate\.region$/,
      /new required property/,
    ],
    [
      'a request property removed',
      (d) => delete schemas(d).ClusterUpdate.properties.size,
      /ClusterUpdate\.size$/,
      /property removed \(a request that sends it is refused\)/,
    ],
    [
      'a request enum value removed',
      (d) => (schemas(d).ClusterUpdate.properties.size.enum = ['small']),
      /ClusterUpdate\.size$/,
      /enum value large no longer accepted/,
    ],
    ['a request string shortened', (d) => (schemas(d).ClusterUpdate.properties.name.maxLength = 32), /ClusterUpdate\.name$/, /maxLength 63 → 32/],
    [
      'a request type narrowed',
      (d) => (schemas(d).ClusterUpdate.properties.name.type = 'integer'),
      /ClusterUpdate\.name$/,
      /type narrowed from string to integer/,
    ],
    [
      'a response property removed',
      (d) => delete schemas(d).Cluster.properties.message,
      /response 200 application\/json: Cluster\.message$/,
      /property removed/,
    ],
    ['a response property no longer required', (d) => (schemas(d).Cluster.required = ['id', 'name', 'status']), /Cluster\.message$/, /may now be absent/],
    [
      'a response property retyped',
      (d) => (schemas(d).Cluster.properties.name = { type: ['string', 'integer'] }),
      /Cluster\.name$/,
      /type widened from string to string, integer/,
    ],
    ['a response property made nullable', (d) => (schemas(d).Cluster.properties.message.type = ['string', 'null']), /Cluster\.message$/, /may now be null/],
    [
      'a response property made nullable by anyOf',
      (d) => (schemas(d).Cluster.properties.message = { anyOf: [{ type: 'string' }, { type: 'null' }] }),
      /Cluster\.message$/,
      /may now be null/,
    ],
    [
      'a response enum value replaced',
      (d) => (schemas(d).ClusterStatus.enum = ['PROVISIONING', 'RUNNING', 'REMOVING']),
      /Cluster\.status › ClusterStatus$/,
      /enum value (DELETING removed|REMOVING added)/,
    ],
    [
      'a closed response enum newly open',
      (d) => (schemas(d).ClusterStatus['x-extensible-enum'] = true),
      /Cluster\.status › ClusterStatus$/,
      /newly marked x-extensible-enum/,
    ],
    [
      'a response property that may now be another type',
      (d) => (schemas(d).Cluster.properties.name = { anyOf: [{ type: 'string' }, { type: 'integer' }] }),
      /Cluster\.name$/,
      /may now be variant 1/,
    ],
    ['a response status removed', (d) => delete operation(d).responses['404'], /response 404$/, /removed/],
    ['a second success status', (d) => (operation(d).responses['202'] = { description: 'later' }), /response 202$/, /new success status/],
    ['a response header removed', (d) => delete operation(d).responses['200'].headers['X-Request-Id'], /response 200$/, /header X-Request-Id removed/],
    [
      'a response media type removed',
      (d) => (operation(d).responses['200'].content = { 'application/yaml': operation(d).responses['200'].content['application/json'] }),
      /response 200$/,
      /media type application\/json removed/,
    ],
    [
      'a property dropped from a webhook payload',
      (d) => delete schemas(d).ClusterCreatedEvent.allOf[1].properties.object,
      /^webhook cluster\.created, request body application\/json: ClusterCreatedEvent\.object$/,
      /may now be Error/,
    ],
    [
      'a webhook payload property removed',
      (d) => delete schemas(d).Event.properties.created_at,
      /^webhook cluster\.created.*ClusterCreatedEvent\.created_at$/,
      /property removed/,
    ],
    ['a webhook removed', (d) => delete d.webhooks['cluster.created'], /^webhook cluster\.created$/, /webhook removed/],
    ['a scope change', (d) => (operation(d).security = [{ token: ['clusters:write'] }]), /^POST /, /no longer accepts the security requirement/],
    [
      'a component renamed',
      (d) => {
        schemas(d).Failure = schemas(d).Error;
        delete schemas(d).Error;
      },
      /components\.schemas\.Error/,
      /component removed/,
    ],
  ])('%s', (_name, edit, where, what) => {
    expect(breaking(edit)).toContainEqual({ breaking: true, where: expect.stringMatching(where), what: expect.stringMatching(what) });
  });

  it('a replaced response enum value as both its halves', () => {
    const whats = breaking((d) => (schemas(d).ClusterStatus.enum = ['PROVISIONING', 'RUNNING', 'REMOVING'])).map((change) => change.what);
    expect(whats).toEqual(['enum value DELETING removed', 'enum value REMOVING added to an enum not marked x-extensible-enum']);
  });
});

describe('the gate takes', () => {
  it.each<[string, (document: Node) => void]>([
    ['a new operation', (d) => (d.paths['/v1/regions'] = { get: { operationId: 'listRegions', responses: { '200': { description: 'ok' } } } })],
    ['a new optional query parameter', (d) => operation(d).parameters.push({ name: 'wait', in: 'query', schema: { type: 'boolean' } })],
    ['a new optional request property', (d) => (schemas(d).ClusterUpdate.properties.labels = { type: 'object', additionalProperties: { type: 'string' } })],
    ['a request enum value added', (d) => schemas(d).ClusterUpdate.properties.size.enum.push('medium')],
    ['a request property no longer required', (d) => (schemas(d).ClusterUpdate.required = [])],
    ['a request string lengthened', (d) => (schemas(d).ClusterUpdate.properties.name.maxLength = 100)],
    [
      'a request enum becoming a pattern its values match',
      (d) => (schemas(d).ClusterUpdate.properties.size = { type: 'string', pattern: '^[a-z]+$', maxLength: 10 }),
    ],
    ['a new response property', (d) => (schemas(d).Cluster.properties.labels = { type: 'object' })],
    ['a response property made required', (d) => (schemas(d).Cluster.properties.labels = { type: 'object' }) && schemas(d).Cluster.required.push('labels')],
    ['a new value of an extensible enum (an event type)', (d) => schemas(d).EventType.enum.push('cluster.deleted')],
    ['a new webhook', (d) => (d.webhooks['cluster.deleted'] = d.webhooks['cluster.created'])],
    ['a new error status', (d) => (operation(d).responses['409'] = operation(d).responses['404'])],
    ['a new response header', (d) => (operation(d).responses['200'].headers.Deprecation = { schema: { type: 'string' } })],
    ['a deprecation', (d) => (operation(d).deprecated = true)],
    ['a const written as a one-value enum', (d) => (schemas(d).ClusterCreatedEvent.allOf[1].properties.type = { type: 'string', enum: ['cluster.created'] })],
    [
      'the same schema moved to a component',
      (d) => {
        schemas(d).Message = { type: 'string' };
        schemas(d).Cluster.properties.message = { $ref: '#/components/schemas/Message' };
      },
    ],
    ['an item schema for a stream', (d) => (operation(d).responses['200'].content['application/json'].itemSchema = { type: 'object' })],
    ['new servers', (d) => (d.servers = [{ url: 'https://api.platform.example' }])],
  ])('%s', (_name, edit) => {
    const changes = changesOf(edit);
    expect(changes.filter((change) => change.breaking)).toEqual([]);
  });

  it('a compatible change counted, a text edit not', () => {
    expect(changesOf((d) => (schemas(d).Cluster.properties.labels = { type: 'object' }))).toEqual([
      { breaking: false, where: 'POST /v1/clusters/{clusterId}, response 200 application/json: Cluster.labels', what: 'property added' },
    ]);
    expect(changesOf((d) => (operation(d).description = 'Updates a cluster.'))).toEqual([]);
  });
});

describe('the verdict', () => {
  const changelog = (version: string) => `# Changelog\n\n## ${version}\n\n- Added.\n`;
  const edited = (version: string, edit: (document: Node) => void) => {
    const document = contract();
    document.info.version = version;
    edit(document);
    return document as never;
  };

  it('fails a breaking change whatever info.version says, naming it', () => {
    const working = edited('3.0.0', (d) => delete d.webhooks['cluster.created']);
    const verdict = judge({ working, released: contract() as never, main: undefined, changelog: changelog('3.0.0') });
    expect(verdict.breaking).toEqual([{ breaking: true, where: 'webhook cluster.created', what: 'webhook removed' }]);
    expect(verdict.lines).toContain('  webhook cluster.created: webhook removed');
    expect(verdict.problems).toEqual([expect.stringMatching(/info\.version 3\.0\.0 must be above it, in major 2/)]);
  });

  it('takes an addition with a higher minor version and its CHANGELOG.md section, and names what is missing otherwise', () => {
    const addition = (d: Node) => (schemas(d).Cluster.properties.labels = { type: 'object' });
    const released = contract() as never;
    expect(judge({ working: edited('2.0.0', addition), released, main: undefined, changelog: changelog('2.0.0') }).problems).toEqual([
      expect.stringMatching(/changed since the released 2\.0\.0: info\.version 2\.0\.0 must be above it, in major 2 \(e\.g\. 2\.1\.0\)/),
    ]);
    expect(judge({ working: edited('2.1.0', addition), released, main: undefined, changelog: changelog('2.0.0') }).problems).toEqual([
      'CHANGELOG.md has no "## 2.1.0" section listing the changes',
    ]);
    const verdict = judge({ working: edited('2.1.0', addition), released, main: undefined, changelog: changelog('2.1.0') });
    expect(verdict).toMatchObject({ breaking: [], problems: [] });
    expect(verdict.lines).toEqual(['Contract 2.1.0 against the released 2.0.0: 0 breaking, 1 compatible change(s).']);
  });

  it("allows reshaping what main added since the release, and lists it; main's released part stays held", () => {
    const released = contract() as never;
    const main = { commit: 'abc1234', document: edited('2.1.0', (d) => (schemas(d).Cluster.properties.labels = { type: 'object' })) };
    const reshaped = edited('2.1.0', (d) => (schemas(d).Cluster.properties.labels = { type: 'array' }));
    const verdict = judge({ working: reshaped, released, main, changelog: changelog('2.1.0') });
    expect(verdict).toMatchObject({ breaking: [], problems: [] });
    expect(verdict.lines).toContain('Since main (abc1234): 1 change(s), 1 of them reshaping what is not released yet (allowed):');
    expect(verdict.lines).toContain('  POST /v1/clusters/{clusterId}, response 200 application/json: Cluster.labels: type widened from object to array');

    const breaksReleased = edited('2.1.0', (d) => delete schemas(d).Cluster.properties.name);
    expect(judge({ working: breaksReleased, released, main, changelog: changelog('2.1.0') }).breaking).toHaveLength(1);
  });

  it('says nothing changed in one line each on a clean tree', () => {
    const verdict = judge({
      working: contract() as never,
      released: contract() as never,
      main: { commit: 'abc1234', document: contract() as never },
      changelog: '',
    });
    expect(verdict.lines).toEqual(['Contract 2.0.0 against the released 2.0.0: unchanged.', 'Since main (abc1234): no change.']);
  });
});
