import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { activeTraceContext, inTraceContext, useOpenTelemetryContext } from "../../../src/diagnostics/traceContext.js";

describe("traceContext", () => {
  const root = { name: "root" };
  const store = new AsyncLocalStorage<object>();
  // An OpenTelemetry context API over AsyncLocalStorage, as its AsyncLocalStorageContextManager keeps it.
  const api = {
    ROOT_CONTEXT: root,
    context: {
      active: (): unknown => store.getStore() ?? root,
      with: <T>(context: never, fn: () => T): T => store.run(context as object, fn),
    },
  };

  it("keeps nothing before @opentelemetry/api has loaded, or at the root context", () => {
    assert.equal(activeTraceContext(), undefined);
    assert.equal(inTraceContext(undefined, () => "ran"), "ran");
    useOpenTelemetryContext(api);
    assert.equal(activeTraceContext(), undefined, "the root context is not kept");
  });

  it("runs a function in the context that was active when a read started, from any other context", () => {
    useOpenTelemetryContext(api);
    const first = { name: "read A" };
    const second = { name: "read B" };
    const kept = store.run(second, () => activeTraceContext());
    assert.equal(kept, second);
    // The shared threshold timer fires in the first read's context; the second read's race is built in its own.
    const seen = store.run(first, () => inTraceContext(kept, () => api.context.active()));
    assert.equal(seen, second);
    assert.equal(store.run(first, () => inTraceContext(undefined, () => api.context.active())), first);
  });
});
