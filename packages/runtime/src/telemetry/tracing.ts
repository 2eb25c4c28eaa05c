import {
  type Attributes,
  context,
  isSpanContextValid,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

/**
 * OpenTelemetry tracing (docs/operations.md "Tracing"). Spans are made by hand at the edges that
 * matter (HTTP requests, tRPC procedures, SQL statements, jobs, SSH commands, webhook deliveries)
 * through `@opentelemetry/api`, which is a no-op until `startTracing` registers a provider: with
 * OTEL_EXPORTER_OTLP_ENDPOINT unset nothing is recorded or sent, and the cost is a no-op call.
 */
export const tracer = trace.getTracer("fleet");

export interface RunningTracing {
  /** Sends what is buffered and stops (the last step of a graceful shutdown). */
  shutdown(): Promise<void>;
}

/** `OTEL_EXPORTER_OTLP_ENDPOINT` set: spans go to `<endpoint>/v1/traces` as OTLP over HTTP. */
export const startTracing = (options: { endpoint: string | undefined; serviceName: string }): RunningTracing => {
  if (options.endpoint === undefined) return { shutdown: async () => {} };
  const url = `${options.endpoint.replace(/\/+$/, "")}/v1/traces`;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: 1_000 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    shutdown: async () => {
      await provider.shutdown().catch(() => {});
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
};

/**
 * A span that records nothing and names no trace (what the no-op tracer gives while tracing is off,
 * and nothing is being continued): making it the active span would change nothing a child span or
 * a log line reads, so the context switch (a new context object per span) is skipped.
 */
const carriesNothing = (span: Span): boolean => !span.isRecording() && !isSpanContextValid(span.spanContext());

/** Runs `work` in a span of its own (a child of the active one); a throw marks it failed. */
export const inSpan = <T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> => {
  // startActiveSpan, in its two steps, so that a span carrying nothing costs no context and no wrapper.
  const parent = context.active();
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  if (carriesNothing(span)) {
    try {
      return work(span);
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
};

/** pino `mixin`: the active span's ids on every log line written inside it. */
export const traceLogMixin = (): Record<string, string> => {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  return traceFlags === 0 && traceId === "00000000000000000000000000000000"
    ? {}
    : { trace_id: traceId, span_id: spanId };
};

/**
 * Starts the server span of an incoming HTTP request, continuing a caller's `traceparent`; the
 * caller ends it when the answer is sent. `run` runs inside it.
 */
export const serverSpan = (
  method: string,
  headers: Record<string, string | string[] | undefined>,
  run: (span: Span) => void,
): void => {
  const parent = propagation.extract(context.active(), headers);
  const span = tracer.startSpan(
    `${method}`,
    { kind: SpanKind.SERVER, attributes: { "http.request.method": method } },
    parent,
  );
  if (carriesNothing(span)) run(span);
  else context.with(trace.setSpan(parent, span), () => run(span));
};

export { SpanKind, SpanStatusCode };
