// Routes a request to its operation with a segment tree built once at start-up: matching walks the path's
// segments, so its cost does not grow with the number of operations (openapi-backend's own router rebuilds
// its tables on every request).
import type { OperationId } from '@platform/api-types';
import { propertyName } from './property-names.ts';

export interface RouteOperation {
  operationId: OperationId;
  method: string;
  path: string;
}

interface Node {
  children: Map<string, Node>;
  param: { name: string; node: Node } | undefined;
  methods: Map<string, RouteOperation>;
}

const newNode = (): Node => ({ children: new Map(), param: undefined, methods: new Map() });

export type RouteMatch =
  | { kind: 'found'; operation: RouteOperation; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string[] }
  /** A parameter's segment is not percent-encoded UTF-8 (`%FF`): no value of it can be meant. */
  | { kind: 'undecodable'; param: string }
  | { kind: 'not_found' };

export class Router {
  private readonly root = newNode();

  constructor(operations: RouteOperation[]) {
    for (const operation of operations) {
      let node = this.root;
      for (const segment of operation.path.split('/').slice(1)) {
        const param = /^\{(.+)\}$/.exec(segment)?.[1];
        if (param !== undefined) {
          node.param ??= { name: propertyName(param), node: newNode() };
          node = node.param.node;
        } else {
          let child = node.children.get(segment);
          if (!child) node.children.set(segment, (child = newNode()));
          node = child;
        }
      }
      node.methods.set(operation.method.toUpperCase(), operation);
    }
  }

  /** `rawPath` is still percent-encoded, so an encoded `/` inside a parameter stays inside it. */
  match(method: string, rawPath: string): RouteMatch {
    let node: Node | undefined = this.root;
    const params: Record<string, string> = {};
    const segments = rawPath.split('/').slice(1);
    for (const segment of segments) {
      const child: Node | undefined = node.children.get(segment);
      if (child) {
        node = child;
      } else if (node.param && segment !== '') {
        let value: string;
        try {
          value = decodeURIComponent(segment);
        } catch {
          return { kind: 'undecodable', param: node.param.name };
        }
        params[node.param.name] = value;
        node = node.param.node;
      } else {
        return { kind: 'not_found' };
      }
    }
    if (node.methods.size === 0) return { kind: 'not_found' };
    const operation = node.methods.get(method.toUpperCase()) ?? (method.toUpperCase() === 'HEAD' ? node.methods.get('GET') : undefined);
    if (!operation) return { kind: 'method_not_allowed', allow: [...node.methods.keys()] };
    return { kind: 'found', operation, params };
  }
}
