import { AsyncLocalStorage } from "node:async_hooks";
import { useInstrumenter } from "@azure/core-tracing";
import type { Instrumenter, InstrumenterSpanOptions, SpanStatus, TracingContext, TracingSpan } from "@azure/core-tracing";

/** A span as the recording instrumenter saw it. */
export interface RecordedSpan {
  readonly name: string;
  /** The `packageName` of the tracing client that started it. */
  readonly packageName: string;
  readonly kind: InstrumenterSpanOptions["spanKind"];
  /** The span it was started under, from the given tracing context or else the active one. */
  readonly parent: RecordedSpan | undefined;
  readonly attributes: Record<string, unknown>;
  status: SpanStatus | undefined;
  readonly exceptions: unknown[];
  ended: boolean;
}

const spanKey = Symbol("recordedSpan");

/** An immutable tracing context, as `@azure/core-tracing`'s own. */
class RecordingContext implements TracingContext {
  constructor(private readonly values: ReadonlyMap<symbol, unknown> = new Map()) {}

  setValue(key: symbol, value: unknown): TracingContext {
    return new RecordingContext(new Map(this.values).set(key, value));
  }

  getValue(key: symbol): unknown {
    return this.values.get(key);
  }

  deleteValue(key: symbol): TracingContext {
    const values = new Map(this.values);
    values.delete(key);
    return new RecordingContext(values);
  }
}

/** What a test gets from {@link useRecordingInstrumenter}. */
export interface SpanRecording {
  /** Every span started, in start order. */
  readonly spans: RecordedSpan[];
  /** Runs `fn` with a span of its own as the active context, as an application's own traced code would. */
  inSpan<T>(name: string, fn: () => Promise<T>): Promise<{ span: RecordedSpan; result: T }>;
  /** Puts core-tracing's no-op instrumenter back. */
  restore(): void;
}

/**
 * Installs an instrumenter that records every span started through
 * `@azure/core-tracing` (this package's, core-rest-pipeline's tracingPolicy's),
 * with an active context kept in `AsyncLocalStorage` the way OpenTelemetry
 * keeps its own: a span started without an explicit context is a child of
 * the active one. Always call `restore()`.
 */
export function useRecordingInstrumenter(): SpanRecording {
  const spans: RecordedSpan[] = [];
  const active = new AsyncLocalStorage<TracingContext>();
  const instrumenter: Instrumenter = {
    startSpan(name, spanOptions) {
      const parentContext = spanOptions.tracingContext ?? active.getStore() ?? new RecordingContext();
      const recorded: RecordedSpan = {
        name,
        packageName: spanOptions.packageName,
        kind: spanOptions.spanKind,
        parent: parentContext.getValue(spanKey) as RecordedSpan | undefined,
        attributes: { ...spanOptions.spanAttributes },
        status: undefined,
        exceptions: [],
        ended: false,
      };
      spans.push(recorded);
      const span: TracingSpan = {
        setAttribute: (key, value) => {
          if (!recorded.ended) recorded.attributes[key] = value;
        },
        setStatus: (status) => {
          if (!recorded.ended) recorded.status = status;
        },
        recordException: (exception) => {
          recorded.exceptions.push(exception);
        },
        end: () => {
          recorded.ended = true;
        },
        isRecording: () => true,
      };
      return { span, tracingContext: parentContext.setValue(spanKey, recorded) };
    },
    withContext(context, callback, ...callbackArgs) {
      return active.run(context, callback, ...callbackArgs);
    },
    parseTraceparentHeader: () => undefined,
    createRequestHeaders: () => ({}),
  };
  useInstrumenter(instrumenter);
  return {
    spans,
    async inSpan(name, fn) {
      const { span, tracingContext } = instrumenter.startSpan(name, { packageName: "test-application" });
      const recorded = tracingContext.getValue(spanKey) as RecordedSpan;
      try {
        return { span: recorded, result: await instrumenter.withContext(tracingContext, fn) };
      } finally {
        span.end();
      }
    },
    restore() {
      // core-tracing falls back to its no-op instrumenter when none is set.
      useInstrumenter(undefined as unknown as Instrumenter);
    },
  };
}
