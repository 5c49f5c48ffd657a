// What a change of the contract does to its clients: two bundled documents compared the way a client meets them,
// every `$ref` followed (paths and webhooks alike), each difference classified as breaking or compatible.
//
// Direction decides: what a client sends (parameters, request bodies, and its answers to webhooks) may accept more,
// never less; what a client receives (responses, webhook bodies and headers) may hold less, never more, except new
// object properties (clients ignore what they do not know) and new values of an enum marked `x-extensible-enum`.
// A generated client's names are part of it too: an operationId, a path parameter's name, a component's name.
// The rules are tested one by one in test/contract-changes.test.ts.

type Node = { [key: string]: unknown };
type Document = Node & { paths?: Record<string, Node>; webhooks?: Record<string, Node>; components?: Record<string, Record<string, unknown>> };

export interface Change {
  breaking: boolean;
  /** Where a reader finds it: the operation or webhook, the part of it, and the schema path. */
  where: string;
  what: string;
}

type Direction = 'request' | 'response';
const flip = (direction: Direction): Direction => (direction === 'request' ? 'response' : 'request');

const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);
const key = (value: unknown) => JSON.stringify(value);
const list = (values: Iterable<unknown>) => [...values].map((value) => (typeof value === 'string' ? value : key(value))).join(', ');

/** The component a local reference names: `#/components/schemas/Cluster` → `Cluster`. */
const refName = (ref: string) => ref.split('/').pop()!.replaceAll('~1', '/').replaceAll('~0', '~');

function follow(document: Document, value: unknown, seen = new Set<string>()): Node {
  if (!isNode(value)) return {};
  const ref = value.$ref;
  if (typeof ref !== 'string') return value;
  if (!ref.startsWith('#/') || seen.has(ref)) return {};
  seen.add(ref);
  const target = ref
    .slice(2)
    .split('/')
    .reduce<unknown>((at, token) => (isNode(at) ? at[token.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined), document);
  // OpenAPI 3.1 lets a reference carry siblings (a description); the target's own keywords are what count.
  const { $ref: _ref, ...siblings } = value;
  return { ...siblings, ...follow(document, target, seen) };
}

/** A schema read for comparison: references followed, `allOf` merged, `const` as a one-value enum, null apart. */
interface Shape {
  types: Set<string> | undefined;
  nullable: boolean;
  enum: unknown[] | undefined;
  extensible: boolean;
  properties: Record<string, unknown>;
  required: Set<string>;
  additionalProperties: unknown;
  items: unknown;
  variants: unknown[] | undefined;
  discriminator: string | undefined;
  raw: Node;
}

const boundKeys = ['maxLength', 'minLength', 'maximum', 'minimum', 'exclusiveMaximum', 'exclusiveMinimum', 'maxItems', 'minItems'] as const;
/** For each bound, whether a larger value accepts more. */
const upper: Record<(typeof boundKeys)[number], boolean> = {
  maxLength: true,
  minLength: false,
  maximum: true,
  minimum: false,
  exclusiveMaximum: true,
  exclusiveMinimum: false,
  maxItems: true,
  minItems: false,
};

const isNullSchema = (schema: Node) => schema.type === 'null' || (Array.isArray(schema.type) && schema.type.length === 1 && schema.type[0] === 'null');

/** `allOf` as one schema: properties and requirements together, types intersected, the narrowest of each part. */
function mergeAll(document: Document, schema: Node): Node {
  if (!Array.isArray(schema.allOf)) return schema;
  const { allOf, ...own } = schema;
  const parts = [own, ...allOf.map((part) => mergeAll(document, follow(document, part)))];
  const merged: Node = {};
  const properties: Record<string, unknown[]> = {};
  const required = new Set<string>();
  for (const part of parts) {
    const values = Array.isArray(part.enum) ? part.enum : 'const' in part ? [part.const] : undefined;
    if (values) {
      // Values every part allows; narrowed by a part, the list is that part's, open only if every part says so.
      const known = Array.isArray(merged.enum) ? new Set(merged.enum.map(key)) : undefined;
      merged.enum = known ? values.filter((value) => known.has(key(value))) : values;
      merged['x-extensible-enum'] = (known === undefined || merged['x-extensible-enum'] === true) && part['x-extensible-enum'] === true;
    }
    for (const [name, value] of Object.entries(part)) {
      if (name === 'enum' || name === 'const' || name === 'x-extensible-enum') {
        // above
      } else if (name === 'properties' && isNode(value)) {
        for (const [property, propertySchema] of Object.entries(value)) (properties[property] ??= []).push(propertySchema);
      } else if (name === 'required' && Array.isArray(value)) {
        for (const property of value) required.add(String(property));
      } else if (name === 'type' && merged.type !== undefined) {
        const known = new Set<unknown>([merged.type].flat());
        merged.type = [value].flat().filter((type: unknown) => known.has(type));
      } else if (name === 'additionalProperties' && merged.additionalProperties === false) {
        // false stays false
      } else if (!(name in merged) || name === 'additionalProperties') {
        merged[name] = value;
      }
    }
  }
  if (Object.keys(properties).length > 0) {
    merged.properties = Object.fromEntries(
      Object.entries(properties).map(([name, schemas]) => [name, schemas.length === 1 ? schemas[0] : narrowest(document, schemas)]),
    );
  }
  if (required.size > 0) merged.required = [...required];
  return merged;
}

/**
 * Several schemas one value must meet, as one: a union met by a reference to one of its members is that member
 * (a webhook body narrows the event's `object` to its kind this way); otherwise they stay an `allOf`.
 */
function narrowest(document: Document, schemas: unknown[]): unknown {
  const refs = schemas.filter((schema) => isNode(schema) && typeof schema.$ref === 'string') as Node[];
  const others = schemas.filter((schema) => !refs.includes(schema as Node)).map((schema) => follow(document, schema));
  const ref = refs[0];
  if (
    refs.length === 1 &&
    ref &&
    others.every(
      (other) => [other.anyOf, other.oneOf].some((union) => Array.isArray(union) && union.some((member) => key(member) === key(ref))) || isEmptyOrDoc(other),
    )
  )
    return ref;
  return { allOf: schemas };
}

const docKeys = new Set(['description', 'title', 'examples', 'example', 'deprecated', 'readOnly', 'writeOnly']);
const isEmptyOrDoc = (schema: Node) => Object.keys(schema).every((name) => docKeys.has(name) || name.startsWith('x-'));

const jsonType = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value === 'number' ? 'number' : typeof value;

function shape(document: Document, value: unknown): Shape {
  const schema = mergeAll(document, follow(document, value));
  let nullable = false;
  let types: Set<string> | undefined;
  if (schema.type !== undefined) {
    types = new Set([schema.type].flat().map(String));
    nullable = types.delete('null');
  }
  let enumeration = Array.isArray(schema.enum) ? schema.enum : 'const' in schema ? [schema.const] : undefined;
  if (enumeration?.includes(null)) {
    nullable = true;
    enumeration = enumeration.filter((entry) => entry !== null);
  }
  // An enum without a type allows its values' types.
  types ??= enumeration?.length ? new Set(enumeration.map(jsonType)) : undefined;
  let variants = (Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined) as unknown[] | undefined;
  if (variants) {
    const nonNull = variants.filter((variant) => !isNullSchema(follow(document, variant)));
    if (nonNull.length < variants.length) nullable = true;
    variants = nonNull;
    if (variants.length === 1) {
      // `anyOf: [X, {type: null}]`: X, nullable.
      const { oneOf: _oneOf, anyOf: _anyOf, ...rest } = schema;
      const inner = shape(document, { ...rest, allOf: [variants[0]] });
      return { ...inner, nullable: inner.nullable || nullable };
    }
  }
  const discriminator = isNode(schema.discriminator) ? String(schema.discriminator.propertyName) : undefined;
  return {
    types,
    nullable,
    enum: enumeration,
    extensible: schema['x-extensible-enum'] === true,
    properties: isNode(schema.properties) ? schema.properties : {},
    required: new Set(Array.isArray(schema.required) ? schema.required.map(String) : []),
    additionalProperties: schema.additionalProperties,
    items: schema.items,
    variants,
    discriminator,
    raw: schema,
  };
}

/** Whether a value of `type` is one of `types` (an integer is a number). */
const covers = (types: Set<string>, type: string) => types.has(type) || (type === 'integer' && types.has('number'));

class Comparison {
  readonly changes: Change[] = [];
  /** Pairs of referenced schemas already compared in a direction: each is reported once, where first met. */
  private readonly compared = new Set<string>();

  private readonly old: Document;
  private readonly now: Document;

  constructor(old: Document, now: Document) {
    this.old = old;
    this.now = now;
  }

  private breaking(where: string, what: string) {
    this.changes.push({ breaking: true, where, what });
  }

  private compatible(where: string, what: string) {
    this.changes.push({ breaking: false, where, what });
  }

  run(): Change[] {
    this.operations();
    this.webhooks();
    this.components();
    return this.changes;
  }

  private operations() {
    const template = (path: string) => path.replace(/\{[^}]+\}/g, '{}');
    const nowByTemplate = new Map(Object.keys(this.now.paths ?? {}).map((path) => [template(path), path]));
    const oldTemplates = new Set(Object.keys(this.old.paths ?? {}).map(template));
    for (const [oldPath, oldItemRaw] of Object.entries(this.old.paths ?? {})) {
      const nowPath = nowByTemplate.get(template(oldPath));
      const oldItem = follow(this.old, oldItemRaw);
      const nowItem = nowPath === undefined ? {} : follow(this.now, this.now.paths![nowPath]);
      for (const method of methods) {
        const oldOperation = oldItem[method];
        if (!isNode(oldOperation)) continue;
        const label = `${method.toUpperCase()} ${oldPath}`;
        const nowOperation = nowItem[method];
        if (!isNode(nowOperation)) {
          this.breaking(label, `operation ${oldOperation.operationId ?? ''} removed`.replace('  ', ' '));
          continue;
        }
        if (oldOperation.operationId !== nowOperation.operationId) {
          this.breaking(label, `operationId ${oldOperation.operationId} renamed to ${nowOperation.operationId} (generated clients name their methods by it)`);
        }
        const oldNames = [...oldPath.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
        const nowNames = [...nowPath!.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
        oldNames.forEach((name, index) => {
          if (name !== nowNames[index])
            this.breaking(label, `path parameter {${name}} renamed to {${nowNames[index]}} (generated clients name their arguments by it)`);
        });
        this.operation(label, [oldPath, nowPath!], oldItem, oldOperation, nowItem, nowOperation, 'request');
      }
      for (const method of methods) {
        if (!isNode(oldItem[method]) && isNode(nowItem[method])) this.compatible(`${method.toUpperCase()} ${nowPath}`, 'operation added');
      }
    }
    for (const path of Object.keys(this.now.paths ?? {})) {
      if (oldTemplates.has(template(path))) continue;
      for (const method of methods)
        if (isNode(follow(this.now, this.now.paths![path])[method])) this.compatible(`${method.toUpperCase()} ${path}`, 'operation added');
    }
  }

  private webhooks() {
    for (const [name, oldItemRaw] of Object.entries(this.old.webhooks ?? {})) {
      const oldItem = follow(this.old, oldItemRaw);
      const nowItem = follow(this.now, this.now.webhooks?.[name]);
      for (const method of methods) {
        const oldOperation = oldItem[method];
        if (!isNode(oldOperation)) continue;
        const label = `webhook ${name}`;
        const nowOperation = nowItem[method];
        if (!isNode(nowOperation)) this.breaking(label, 'webhook removed');
        // The service sends a webhook's request and the client answers it: the directions are reversed.
        else this.operation(label, ['', ''], oldItem, oldOperation, nowItem, nowOperation, 'response');
      }
    }
    for (const name of Object.keys(this.now.webhooks ?? {})) if (!this.old.webhooks?.[name]) this.compatible(`webhook ${name}`, 'webhook added');
  }

  /** Component names are generated type names: one gone breaks the code that names it. */
  private components() {
    for (const [kind, entries] of Object.entries(this.old.components ?? {})) {
      for (const name of Object.keys(entries)) {
        if (!(name in (this.now.components?.[kind] ?? {}))) this.breaking(`components.${kind}.${name}`, 'component removed (generated type names change)');
      }
    }
    for (const [kind, entries] of Object.entries(this.now.components ?? {})) {
      for (const name of Object.keys(entries))
        if (!(name in (this.old.components?.[kind] ?? {}))) this.compatible(`components.${kind}.${name}`, 'component added');
    }
  }

  /** `sent`: the direction of what the caller sends (a path operation's request); a webhook's is `response`. */
  private operation(label: string, paths: [string, string], oldItem: Node, oldOperation: Node, nowItem: Node, nowOperation: Node, sent: Direction) {
    const [oldPath, nowPath] = paths;
    this.parameters(label, this.parameterMap(this.old, oldPath, oldItem, oldOperation), this.parameterMap(this.now, nowPath, nowItem, nowOperation), sent);
    this.requestBody(label, follow(this.old, oldOperation.requestBody), follow(this.now, nowOperation.requestBody), sent);
    this.responses(label, follow(this.old, oldOperation.responses), follow(this.now, nowOperation.responses), flip(sent));
    if (sent === 'request') this.security(label, oldOperation, nowOperation);
    if (nowOperation.deprecated === true && oldOperation.deprecated !== true) this.compatible(label, 'deprecated');
  }

  private parameterMap(document: Document, path: string, item: Node, operation: Node): Map<string, Node> {
    const map = new Map<string, Node>();
    const positions = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
    for (const raw of [...((item.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])]) {
      const parameter = follow(document, raw);
      // Path parameters are matched by position (a rename is reported with the path); the others by name.
      const id = parameter.in === 'path' ? `path#${positions.indexOf(String(parameter.name))}` : `${parameter.in}:${String(parameter.name).toLowerCase()}`;
      map.set(id, parameter);
    }
    return map;
  }

  private parameters(label: string, old: Map<string, Node>, now: Map<string, Node>, sent: Direction) {
    const name = (parameter: Node) => `${parameter.in} parameter ${parameter.name}`;
    for (const [id, oldParameter] of old) {
      const nowParameter = now.get(id);
      if (!nowParameter) {
        this.breaking(label, `${name(oldParameter)} removed${sent === 'request' ? ' (a request that sends it is refused)' : ''}`);
        continue;
      }
      const where = `${label}, ${name(nowParameter)}`;
      if (sent === 'request' && nowParameter.required === true && oldParameter.required !== true) this.breaking(where, 'now required');
      if (sent === 'response' && nowParameter.required !== true && oldParameter.required === true) this.breaking(where, 'may now be absent');
      for (const option of ['style', 'explode'] as const) {
        if (key(oldParameter[option]) !== key(nowParameter[option])) this.breaking(where, `${option} changed (the value is written differently)`);
      }
      this.schema(where, '', oldParameter.schema, nowParameter.schema, sent);
      if (nowParameter.deprecated === true && oldParameter.deprecated !== true) this.compatible(where, 'deprecated');
    }
    for (const [id, nowParameter] of now) {
      if (old.has(id)) continue;
      if (sent === 'request' && nowParameter.required === true) this.breaking(label, `new required ${name(nowParameter)}`);
      else this.compatible(label, `${name(nowParameter)} added`);
    }
  }

  private requestBody(label: string, old: Node, now: Node, sent: Direction) {
    const where = `${label}, request body`;
    const oldHas = isNode(old.content);
    const nowHas = isNode(now.content);
    if (!oldHas && !nowHas) return;
    if (sent === 'request') {
      if (!oldHas && now.required === true) return this.breaking(where, 'a body is now required');
      if (oldHas && !nowHas) return this.breaking(where, 'removed (a request that sends one is refused)');
      if (oldHas && now.required === true && old.required !== true) this.breaking(where, 'now required');
    } else {
      if (oldHas && !nowHas) return this.breaking(where, 'removed');
      if (oldHas && now.required !== true && old.required === true) this.breaking(where, 'may now be absent');
    }
    if (!oldHas) return this.compatible(where, 'added');
    this.content(where, old.content as Node, now.content as Node, sent);
  }

  private content(where: string, old: Node, now: Node, direction: Direction) {
    for (const [type, oldMedia] of Object.entries(old)) {
      const nowMedia = now[type];
      if (!isNode(nowMedia)) {
        this.breaking(where, `media type ${type} removed`);
        continue;
      }
      const media = `${where} ${type}`;
      this.schema(media, '', (oldMedia as Node).schema, nowMedia.schema, direction);
      // OpenAPI 3.2's per-item schema of a stream (text/event-stream, JSON Lines).
      if ((oldMedia as Node).itemSchema !== undefined || nowMedia.itemSchema !== undefined)
        this.schema(`${media} items`, '', (oldMedia as Node).itemSchema, nowMedia.itemSchema, direction);
    }
    for (const type of Object.keys(now)) if (!(type in old)) this.compatible(where, `media type ${type} added`);
  }

  private responses(label: string, old: Node, now: Node, direction: Direction) {
    const success = (status: string) => /^[23]/.test(status);
    for (const [status, oldRaw] of Object.entries(old)) {
      const where = `${label}, response ${status}`;
      if (!(status in now)) {
        this.breaking(where, 'removed (generated clients lose its type)');
        continue;
      }
      const oldResponse = follow(this.old, oldRaw);
      const nowResponse = follow(this.now, now[status]);
      const oldHeaders = isNode(oldResponse.headers) ? oldResponse.headers : {};
      const nowHeaders = isNode(nowResponse.headers) ? nowResponse.headers : {};
      const lower = new Map(Object.entries(nowHeaders).map(([name, header]) => [name.toLowerCase(), header]));
      for (const [name, oldHeaderRaw] of Object.entries(oldHeaders)) {
        const nowHeaderRaw = lower.get(name.toLowerCase());
        if (nowHeaderRaw === undefined) {
          this.breaking(where, `header ${name} removed`);
          continue;
        }
        const [oldHeader, nowHeader] = [follow(this.old, oldHeaderRaw), follow(this.now, nowHeaderRaw)];
        if (direction === 'response' && oldHeader.required === true && nowHeader.required !== true)
          this.breaking(`${where}, header ${name}`, 'may now be absent');
        this.schema(`${where}, header ${name}`, '', oldHeader.schema, nowHeader.schema, direction);
      }
      const oldNames = new Set(Object.keys(oldHeaders).map((name) => name.toLowerCase()));
      for (const name of Object.keys(nowHeaders)) if (!oldNames.has(name.toLowerCase())) this.compatible(where, `header ${name} added`);
      const oldContent = isNode(oldResponse.content) ? oldResponse.content : {};
      const nowContent = isNode(nowResponse.content) ? nowResponse.content : {};
      if (Object.keys(oldContent).length === 0 && Object.keys(nowContent).length > 0 && direction === 'response') {
        this.compatible(where, 'body added');
      }
      this.content(where, oldContent, nowContent, direction);
    }
    const oldSuccess = Object.keys(old).some(success);
    for (const status of Object.keys(now)) {
      if (status in old) continue;
      // A second success status is an answer the client's code does not expect; a new error status is one more error.
      if (direction === 'response' && success(status) && oldSuccess) this.breaking(`${label}, response ${status}`, 'new success status');
      else this.compatible(`${label}, response ${status}`, 'added');
    }
  }

  private security(label: string, oldOperation: Node, nowOperation: Node) {
    const requirements = (document: Document, operation: Node) =>
      ((operation.security ?? document.security ?? []) as Record<string, string[]>[]).map((requirement) =>
        key(
          Object.fromEntries(
            Object.entries(requirement)
              .map(([scheme, scopes]) => [scheme, [...scopes].sort()])
              .sort(([a], [b]) => (a! < b! ? -1 : 1)),
          ),
        ),
      );
    const old = requirements(this.old, oldOperation);
    const now = new Set(requirements(this.now, nowOperation));
    if (old.length > 0 && now.size === 0) return this.compatible(label, 'no longer needs a token');
    if (old.length === 0 && now.size > 0) return this.breaking(label, 'now needs a token');
    for (const requirement of old) if (!now.has(requirement)) this.breaking(label, `no longer accepts the security requirement ${requirement}`);
  }

  /** Compares two schemas met at `where` (`at`: the path inside, from the nearest named schema). */
  private schema(where: string, at: string, oldRaw: unknown, nowRaw: unknown, direction: Direction) {
    if (oldRaw === undefined && nowRaw === undefined) return;
    const oldRef = isNode(oldRaw) && typeof oldRaw.$ref === 'string' ? refName(oldRaw.$ref) : undefined;
    const nowRef = isNode(nowRaw) && typeof nowRaw.$ref === 'string' ? refName(nowRaw.$ref) : undefined;
    if (oldRef && nowRef) {
      const pair = `${direction}:${oldRef}:${nowRef}`;
      if (this.compared.has(pair)) return;
      this.compared.add(pair);
    }
    // The path from the operation's schema, and from the component it is in: `ClusterList.data[] › Cluster.name`.
    if (nowRef) at = at ? `${at} › ${nowRef}` : nowRef;
    const place = at ? `${where}: ${at}` : where;
    const old = shape(this.old, oldRaw);
    const now = shape(this.now, nowRaw);
    const receiving = direction === 'response';

    // Types and null.
    if (old.types && (!now.types || [...now.types].some((type) => !covers(old.types!, type))) && receiving) {
      this.breaking(place, `type widened from ${list(old.types)} to ${now.types ? list(now.types) : 'any'}`);
    }
    if (now.types && (!old.types || [...old.types].some((type) => !covers(now.types!, type))) && !receiving) {
      this.breaking(place, `type narrowed from ${old.types ? list(old.types) : 'any'} to ${list(now.types)}`);
    }
    const oldNull = old.nullable || (!old.types && !old.enum && !old.variants);
    const nowNull = now.nullable || (!now.types && !now.enum && !now.variants);
    if (receiving && nowNull && !oldNull) this.breaking(place, 'may now be null');
    if (!receiving && oldNull && !nowNull) this.breaking(place, 'no longer accepts null');

    // Enums.
    if (old.enum || now.enum) {
      const oldValues = new Set((old.enum ?? []).map(key));
      const nowValues = new Set((now.enum ?? []).map(key));
      const added = [...nowValues].filter((value) => !oldValues.has(value)).map((value) => JSON.parse(value));
      const removed = [...oldValues].filter((value) => !nowValues.has(value)).map((value) => JSON.parse(value));
      if (receiving) {
        if (old.enum && !now.enum) this.breaking(place, `no longer limited to ${list(old.enum)}`);
        if (old.enum && now.enum && removed.length > 0) this.breaking(place, `enum value ${list(removed)} removed`);
        if (old.enum && now.enum && added.length > 0) {
          if (old.extensible) this.compatible(place, `enum value ${list(added)} added (extensible)`);
          else this.breaking(place, `enum value ${list(added)} added to an enum not marked x-extensible-enum`);
        }
        if (now.extensible && !old.extensible && old.enum)
          this.breaking(place, 'newly marked x-extensible-enum (clients were promised only the listed values)');
      } else {
        if (now.enum && !old.enum) this.breaking(place, `now limited to ${list(now.enum)}`);
        if (old.enum && now.enum && removed.length > 0) this.breaking(place, `enum value ${list(removed)} no longer accepted`);
        if (old.enum && now.enum && added.length > 0) this.compatible(place, `enum value ${list(added)} added`);
      }
    }

    // Bounds, pattern and format. A request enum's values that all meet the new bound lose nothing to it.
    const keeps = (test: (value: unknown) => boolean) => !receiving && old.enum !== undefined && old.enum.every(test);
    const lengthOk = (bound: string, limit: number) => (value: unknown) =>
      typeof value === 'string' && (bound === 'maxLength' ? value.length <= limit : bound === 'minLength' ? value.length >= limit : false);
    for (const bound of boundKeys) {
      const [was, is] = [old.raw[bound] as number | undefined, now.raw[bound] as number | undefined];
      if (was === is) continue;
      const accepts =
        is === undefined
          ? true
          : was === undefined
            ? keeps(lengthOk(bound, is))
            : upper[bound]
              ? is > was || keeps(lengthOk(bound, is))
              : is < was || keeps(lengthOk(bound, is));
      if (accepts === receiving) this.breaking(place, `${bound} ${was ?? 'none'} → ${is ?? 'none'}`);
      else this.compatible(place, `${bound} ${was ?? 'none'} → ${is ?? 'none'}`);
    }
    for (const keyword of ['pattern', 'format', 'multipleOf'] as const) {
      const [was, is] = [old.raw[keyword], now.raw[keyword]];
      if (was === is) continue;
      // Dropping one accepts more; adding or changing one accepts something else.
      if (is === undefined && !receiving) this.compatible(place, `${keyword} ${String(was)} removed`);
      else if (was === undefined && receiving) this.compatible(place, `${keyword} ${String(is)} added`);
      else if (keyword === 'pattern' && typeof is === 'string' && keeps((value) => typeof value === 'string' && new RegExp(is, 'u').test(value)))
        this.compatible(place, `pattern ${is} (every value it accepted still matches)`);
      else this.breaking(place, `${keyword} ${String(was ?? 'none')} → ${String(is ?? 'none')}`);
    }

    // Objects.
    const child = (name: string) => (at ? `${at}.${name}` : name);
    for (const [name, oldProperty] of Object.entries(old.properties)) {
      if (!(name in now.properties)) {
        this.breaking(`${where}: ${child(name)}`, receiving ? 'property removed' : 'property removed (a request that sends it is refused)');
        continue;
      }
      if (receiving && old.required.has(name) && !now.required.has(name)) this.breaking(`${where}: ${child(name)}`, 'no longer required: may now be absent');
      if (!receiving && now.required.has(name) && !old.required.has(name)) this.breaking(`${where}: ${child(name)}`, 'now required');
      this.schema(where, child(name), oldProperty, now.properties[name], direction);
    }
    for (const name of Object.keys(now.properties)) {
      if (name in old.properties) continue;
      if (!receiving && now.required.has(name)) this.breaking(`${where}: ${child(name)}`, 'new required property');
      else this.compatible(`${where}: ${child(name)}`, 'property added');
    }
    const openOld = old.additionalProperties !== false;
    const openNow = now.additionalProperties !== false;
    if (!receiving && openOld && !openNow && Object.keys(old.properties).length + Object.keys(now.properties).length > 0) {
      this.breaking(place, 'no longer accepts other properties');
    }
    if (isNode(old.additionalProperties) && isNode(now.additionalProperties)) {
      this.schema(where, `${at}{*}`, old.additionalProperties, now.additionalProperties, direction);
    }

    // Arrays.
    if (old.items !== undefined || now.items !== undefined) this.schema(where, `${at}[]`, old.items, now.items, direction);

    // Unions.
    if (old.variants || now.variants) this.variants(where, at, place, [old, oldRaw], [now, nowRaw], direction);
  }

  /** `oneOf`/`anyOf` members matched by their component name, their discriminator value, else their place. */
  private variants(where: string, at: string, place: string, [old, oldRaw]: [Shape, unknown], [now, nowRaw]: [Shape, unknown], direction: Direction) {
    // A schema that is no union is a union of itself (a reference keeps its name, to match a member of that name).
    const members = (document: Document, shaped: Shape, raw: unknown) => {
      const map = new Map<string, unknown>();
      (shaped.variants ?? [raw]).forEach((member, index) => {
        const ref = isNode(member) && typeof member.$ref === 'string' ? refName(member.$ref) : undefined;
        const discriminator = shaped.discriminator ?? now.discriminator ?? old.discriminator;
        const tag = discriminator ? shape(document, follow(document, member)).properties[discriminator] : undefined;
        const value = tag === undefined ? undefined : shape(document, tag).enum;
        map.set(ref ?? (value?.length === 1 ? `=${key(value[0])}` : `#${index}`), member);
      });
      return map;
    };
    const oldMembers = members(this.old, old, oldRaw);
    const nowMembers = members(this.now, now, nowRaw);
    for (const [id, member] of nowMembers) {
      const oldMember = oldMembers.get(id);
      if (oldMember !== undefined) this.schema(where, at, oldMember, member, direction);
      else if (direction === 'response') this.breaking(place, `may now be ${id.replace(/^[=#]/, 'variant ')}`);
      else this.compatible(place, `accepts ${id.replace(/^[=#]/, 'variant ')} too`);
    }
    for (const id of oldMembers.keys()) {
      if (nowMembers.has(id)) continue;
      if (direction === 'request') this.breaking(place, `no longer accepts ${id.replace(/^[=#]/, 'variant ')}`);
      else this.compatible(place, `no longer ${id.replace(/^[=#]/, 'variant ')}`);
    }
  }
}

/** Every change from `old` to `now` that a client can meet, classified. */
export function compareContracts(old: Document, now: Document): Change[] {
  return new Comparison(old, now).run();
}
