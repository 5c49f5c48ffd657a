// An OTLP/HTTP trace receiver for tests: a node:http server taking POST /v1/traces as the OpenTelemetry
// exporters send it (protobuf, opentelemetry-proto's collector/trace/v1 ExportTraceServiceRequest), decoding the
// fields the tests read with a protobuf reader of its own, so nothing of the exporter's code checks itself.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** opentelemetry-proto's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** opentelemetry-proto's Status.code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** The resource's attributes (service.name, …). */
  resource: Record<string, string | number | boolean>;
}

/** The fields of one protobuf message: field number → its values (varints as bigint, the rest as bytes). */
function fields(buffer: Buffer): Map<number, (bigint | Buffer)[]> {
  const out = new Map<number, (bigint | Buffer)[]>();
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buffer[at++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buffer.length) {
    const key = Number(varint());
    const [field, wire] = [key >>> 3, key & 7];
    let value: bigint | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 1) value = buffer.subarray(at, (at += 8));
    else if (wire === 2) {
      const length = Number(varint());
      value = buffer.subarray(at, (at += length));
    } else if (wire === 5) value = buffer.subarray(at, (at += 4));
    else throw new Error(`unexpected protobuf wire type ${wire}`);
    out.set(field, [...(out.get(field) ?? []), value]);
  }
  return out;
}

const bytesOf = (message: Map<number, (bigint | Buffer)[]>, field: number) => message.get(field)?.[0] as Buffer | undefined;
const stringOf = (message: Map<number, (bigint | Buffer)[]>, field: number) => bytesOf(message, field)?.toString('utf8') ?? '';
const numberOf = (message: Map<number, (bigint | Buffer)[]>, field: number) => Number((message.get(field)?.[0] as bigint | undefined) ?? 0n);

/** KeyValue { key = 1; AnyValue value = 2 }, AnyValue { string 1, bool 2, int 3, double 4 }. */
function attributes(list: (bigint | Buffer)[] = []): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const entry of list) {
    const keyValue = fields(entry as Buffer);
    const value = fields(bytesOf(keyValue, 2) ?? Buffer.alloc(0));
    if (value.has(1)) out[stringOf(keyValue, 1)] = stringOf(value, 1);
    else if (value.has(2)) out[stringOf(keyValue, 1)] = numberOf(value, 2) === 1;
    else if (value.has(3)) out[stringOf(keyValue, 1)] = numberOf(value, 3);
    else if (value.has(4)) out[stringOf(keyValue, 1)] = bytesOf(value, 4)!.readDoubleLE(0);
  }
  return out;
}

/** ExportTraceServiceRequest { ResourceSpans resource_spans = 1 } → ResourceSpans { Resource 1; ScopeSpans 2 } → ScopeSpans { spans 2 }. */
export function decodeExport(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of fields(body).get(1) ?? []) {
    const rs = fields(resourceSpans as Buffer);
    const resource = attributes(fields(bytesOf(rs, 1) ?? Buffer.alloc(0)).get(1));
    for (const scopeSpans of rs.get(2) ?? []) {
      for (const raw of fields(scopeSpans as Buffer).get(2) ?? []) {
        const span = fields(raw as Buffer);
        const status = fields(bytesOf(span, 15) ?? Buffer.alloc(0));
        spans.push({
          traceId: bytesOf(span, 1)?.toString('hex') ?? '',
          spanId: bytesOf(span, 2)?.toString('hex') ?? '',
          parentSpanId: bytesOf(span, 4)?.toString('hex') ?? '',
          name: stringOf(span, 5),
          kind: numberOf(span, 6),
          attributes: attributes(span.get(9)),
          statusCode: numberOf(status, 3),
          resource,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  /** The URL to set as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Content types of the exports received. */
  contentTypes: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    contentTypes.push(req.headers['content-type'] ?? '');
    spans.push(...decodeExport(Buffer.concat(chunks)));
    // An empty ExportTraceServiceResponse: all accepted.
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
