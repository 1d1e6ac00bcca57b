import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import { AbortError } from "@azure/abort-controller";
import { RestError, createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelinePolicy, PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import type { RegionCache } from "../topology/regionCache.js";
import { regionCacheOption } from "../topology/regionCache.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import { describe, optionalBoolean, regionName, regionNameList } from "../options.js";
import { CosmosHeaders } from "../cosmos/headers.js";
import type { OperationKind } from "../cosmos/operationKind.js";
import { classifyOperation } from "../cosmos/operationKind.js";
import { seededRandom } from "./seededRandom.js";
import { policyLogger } from "../log.js";
import { sendObservingAccount } from "../topology/accountObservation.js";

/** The name of the {@link faultInjectionPolicy}. */
export const faultInjectionPolicyName = "faultInjectionPolicy";

const logger = policyLogger(faultInjectionPolicyName);

/** A synthetic response that a {@link FaultRule} answers with instead of sending the request. */
export interface FaultResult {
  /** The HTTP status, 100 to 599. */
  status: number;
  /** Sent as `x-ms-substatus`; default 0. */
  subStatus?: number;
  /**
   * The body, serialized as JSON. Default: for a status of 400 or more, a
   * Cosmos DB error body (`{ code, message }`), which `@azure/cosmos` needs to
   * build its error; otherwise no body.
   */
  body?: unknown;
  /** Extra response headers; they override the ones the policy sets (`x-ms-activity-id`, `x-ms-request-charge`, `x-ms-substatus`, `content-type`). */
  headers?: Record<string, string>;
}

/**
 * What to do to the requests a rule matches. A rule has at least one effect:
 * `delayMs` alone delays the request and then sends it; with `result` or
 * `connectionReset` it delays and then fails. `responseDelayMs` sends the
 * request and holds its response. `timeout` stands alone.
 */
export interface FaultRule {
  /** Names the rule in hit counts, logs and {@link FaultInjectionPolicy.removeRule}. Default: `rule1`, `rule2`, … in the order rules are installed. */
  id?: string;
  /**
   * The region or regions whose requests the rule applies to, by name (any
   * case and spacing, as in `"West US"` or `"westus"`). The region of a
   * request is the one whose endpoint its URL targets. Default: every
   * region, including requests to hosts the account does not list.
   */
  region?: string | readonly string[];
  /** The operation kinds the rule applies to. Default: every kind. */
  operations?: readonly OperationKind[];
  /**
   * Milliseconds to wait before sending the request (or before failing it):
   * a slow connection. A request aborted during the wait never reaches the
   * service. The request's abort signal cuts the wait short.
   */
  delayMs?: number;
  /**
   * Milliseconds to hold the response after the service has answered: a slow
   * answer, as the response-delay rules of the Java and .NET SDKs inject. The
   * request reaches the service (a write takes effect) even when it is
   * aborted during the wait; its response is then discarded. Transport
   * errors are not held. Not combinable with `result`, `connectionReset` or
   * `timeout`, which never reach the service.
   */
  responseDelayMs?: number;
  /** Answer with this response; the request never reaches the wire. */
  result?: FaultResult;
  /** Fail as a reset connection does: a `RestError` with code `"ECONNRESET"`. The request never reaches the wire. */
  connectionReset?: true;
  /**
   * Never answer: the request hangs until its abort signal aborts (as
   * `@azure/cosmos` does on its per-attempt `requestTimeout`) or its
   * `timeout` elapses, then rejects with an `AbortError`. A request with
   * neither hangs for good.
   */
  timeout?: true;
  /** The chance, 0 to 1, that a matching request is faulted; drawn from the policy's seeded generator. Default 1. */
  probability?: number;
  /** Apply the rule at most this many times (at least 1). Default: without limit. */
  count?: number;
}

/** An installed rule: its id, a frozen copy of its definition, and how often it has been applied. */
export interface FaultRuleHandle {
  /** The rule's id, given or assigned. */
  readonly id: string;
  /** The rule as installed; changing the object passed in does not change it. */
  readonly rule: Readonly<FaultRule>;
  /** How many requests the rule has been applied to. */
  readonly hits: number;
}

/** Options of the {@link faultInjectionPolicy}. */
export interface FaultInjectionPolicyOptions {
  /**
   * The account's regions, used to name the region a request goes to. Share
   * the hedging policies' cache. Default: a new `RegionCache` that
   * learns the topology from the database-account responses passing through
   * this policy.
   */
  regions?: RegionCache;
  /** The rules, evaluated in order; the first that matches a request, has count left and wins its draw is applied. */
  rules: readonly FaultRule[];
  /** Seeds the generator behind `probability`, so that a run repeats its faults. Default: a random seed, readable as {@link FaultInjectionPolicy.seed}. */
  seed?: number;
  /** Whether rules are applied; switchable at runtime through {@link FaultInjectionPolicy.enabled}. Default `true`. */
  enabled?: boolean;
}

/** The {@link faultInjectionPolicy}: a pipeline policy with runtime controls. */
export interface FaultInjectionPolicy extends PipelinePolicy {
  /** Whether rules are applied; while `false` every request passes through untouched. */
  enabled: boolean;
  /** The seed of the probability draws, to reproduce a run. */
  readonly seed: number;
  /** The installed rules, in evaluation order. */
  readonly rules: readonly FaultRuleHandle[];
  /** Installs a rule after the existing ones. Throws a `TypeError` or `RangeError` on a bad rule. */
  addRule(rule: FaultRule): FaultRuleHandle;
  /** Uninstalls a rule; a request already being delayed by it is not affected. Returns whether the rule was installed. */
  removeRule(id: string): boolean;
  /** Uninstalls every rule. */
  clearRules(): void;
  /** How many requests the installed rule with this id has been applied to. Throws a `RangeError` for an unknown id. */
  hits(id: string): number;
}

// A Record over the union makes the compiler insist on every kind, so a new kind cannot be forgotten here.
const operationKinds: Record<OperationKind, true> = {
  accountRead: true,
  collectionRead: true,
  partitionKeyRangeReadFeed: true,
  partitionKeyRangeReadFeedContinuation: true,
  pointRead: true,
  query: true,
  queryPlan: true,
  readFeed: true,
  changeFeed: true,
  batch: true,
  create: true,
  upsert: true,
  replace: true,
  patch: true,
  delete: true,
  other: true,
};

const ruleFields: ReadonlySet<string> = new Set([
  "id",
  "region",
  "operations",
  "delayMs",
  "responseDelayMs",
  "result",
  "connectionReset",
  "timeout",
  "probability",
  "count",
]);
const resultFields: ReadonlySet<string> = new Set(["status", "subStatus", "body", "headers"]);
const optionFields: ReadonlySet<string> = new Set(["regions", "rules", "seed", "enabled"]);

// setTimeout fires at once (with a warning) for anything above a signed 32-bit count of milliseconds.
const maxDelayMs = 2 ** 31 - 1;
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Header values must not be able to smuggle another header or line into a response.
const unsafeHeaderValue = /[\r\n\0]/;

interface InstalledRule {
  readonly id: string;
  readonly rule: Readonly<FaultRule>;
  readonly regions: ReadonlySet<string> | undefined;
  readonly operations: ReadonlySet<OperationKind> | undefined;
  readonly bodyText: string;
  readonly effect: string;
  hits: number;
}

function assertKnownFields(where: string, value: object, known: ReadonlySet<string>): void {
  for (const key of Object.keys(value)) {
    if (!known.has(key)) {
      throw new TypeError(`${where} has an unknown field ${JSON.stringify(key)}; known fields: ${[...known].join(", ")}.`);
    }
  }
}

function assertObject(where: string, value: unknown): asserts value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${where} must be an object; got ${describe(value)}.`);
  }
}

function milliseconds(where: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > maxDelayMs) {
    throw new RangeError(`${where} must be a finite number of milliseconds from 0 to ${maxDelayMs}; got ${describe(value)}.`);
  }
  return value;
}

function wholeNumberIn(where: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${where} must be a whole number from ${min} to ${max}; got ${describe(value)}.`);
  }
  return value;
}

function validateHeaders(where: string, value: unknown): Record<string, string> {
  assertObject(where, value);
  const headers: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(value)) {
    if (!headerName.test(name)) throw new TypeError(`${where} has an invalid header name ${describe(name)}.`);
    if (typeof headerValue !== "string") {
      throw new TypeError(`${where}[${JSON.stringify(name)}] must be a string; got ${describe(headerValue)}.`);
    }
    if (unsafeHeaderValue.test(headerValue)) {
      throw new TypeError(`${where}[${JSON.stringify(name)}] must not contain CR, LF or NUL characters.`);
    }
    headers[name] = headerValue;
  }
  return headers;
}

function defaultErrorBody(id: string, status: number, subStatus: number): unknown {
  return {
    code: (STATUS_CODES[status] ?? "Error").replace(/[^A-Za-z]/g, ""),
    message: `Fault injected by ${faultInjectionPolicyName} (rule ${id}): status ${status}, substatus ${subStatus}.`,
  };
}

function serializeBody(where: string, body: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(body);
  } catch (error) {
    throw new TypeError(`${where} must be serializable as JSON (${error instanceof Error ? error.message : String(error)}).`, { cause: error });
  }
  if (text === undefined) throw new TypeError(`${where} must be serializable as JSON; got ${describe(body)}.`);
  return text;
}

function validateResult(where: string, value: unknown): FaultResult {
  assertObject(where, value);
  assertKnownFields(where, value, resultFields);
  const result: FaultResult = { status: wholeNumberIn(`${where}.status`, value["status"], 100, 599) };
  if (value["subStatus"] !== undefined) result.subStatus = wholeNumberIn(`${where}.subStatus`, value["subStatus"], 0, 2 ** 31 - 1);
  if (value["body"] !== undefined) {
    serializeBody(`${where}.body`, value["body"]);
    result.body = value["body"];
  }
  if (value["headers"] !== undefined) result.headers = validateHeaders(`${where}.headers`, value["headers"]);
  return result;
}

function validateOperations(where: string, value: unknown): OperationKind[] {
  if (!Array.isArray(value)) throw new TypeError(`${where} must be an array of operation kinds; got ${describe(value)}.`);
  if (value.length === 0) throw new RangeError(`${where} must list at least one operation kind; leave it out to match every kind.`);
  return value.map((kind: unknown, index) => {
    if (typeof kind !== "string" || !Object.hasOwn(operationKinds, kind)) {
      throw new RangeError(
        `${where}[${index}] must be an operation kind (${Object.keys(operationKinds).join(", ")}); got ${describe(kind)}.`,
      );
    }
    return kind as OperationKind;
  });
}

function validateRegion(where: string, value: unknown): string | string[] {
  if (typeof value === "string") return regionName(where, value);
  const names = regionNameList(where, value);
  if (names.length === 0) throw new RangeError(`${where} must name at least one region; leave it out to match every region.`);
  return [...names];
}

function trueFlag(where: string, value: unknown): true | undefined {
  if (value === undefined) return undefined;
  if (value !== true) throw new TypeError(`${where} must be true when set (leave it out otherwise); got ${describe(value)}.`);
  return true;
}

function describeEffect(rule: FaultRule): string {
  const parts: string[] = [];
  if (rule.delayMs !== undefined) parts.push(`a ${rule.delayMs} ms delay`);
  if (rule.responseDelayMs !== undefined) parts.push(`a ${rule.responseDelayMs} ms response delay`);
  if (rule.timeout === true) parts.push("a timeout");
  if (rule.connectionReset === true) parts.push("a connection reset");
  if (rule.result !== undefined) parts.push(`status ${rule.result.status}/${rule.result.subStatus ?? 0}`);
  return parts.join(", then ");
}

/** Checks a rule and returns a private, frozen copy; every error names `where`, the field and the value. */
function validateRule(where: string, value: unknown): FaultRule {
  assertObject(where, value);
  assertKnownFields(where, value, ruleFields);
  const rule: FaultRule = {};
  if (value["id"] !== undefined) {
    if (typeof value["id"] !== "string" || value["id"].trim() === "") {
      throw new TypeError(`${where}.id must be a non-empty string; got ${describe(value["id"])}.`);
    }
    rule.id = value["id"];
  }
  if (value["region"] !== undefined) {
    const region = validateRegion(`${where}.region`, value["region"]);
    rule.region = Array.isArray(region) ? Object.freeze(region) : region;
  }
  if (value["operations"] !== undefined) rule.operations = Object.freeze(validateOperations(`${where}.operations`, value["operations"]));
  if (value["delayMs"] !== undefined) rule.delayMs = milliseconds(`${where}.delayMs`, value["delayMs"]);
  if (value["responseDelayMs"] !== undefined) rule.responseDelayMs = milliseconds(`${where}.responseDelayMs`, value["responseDelayMs"]);
  if (value["result"] !== undefined) rule.result = Object.freeze(validateResult(`${where}.result`, value["result"]));
  const connectionReset = trueFlag(`${where}.connectionReset`, value["connectionReset"]);
  if (connectionReset !== undefined) rule.connectionReset = connectionReset;
  const timeout = trueFlag(`${where}.timeout`, value["timeout"]);
  if (timeout !== undefined) rule.timeout = timeout;
  if (value["probability"] !== undefined) {
    const probability = value["probability"];
    if (typeof probability !== "number" || !(probability >= 0 && probability <= 1)) {
      throw new RangeError(`${where}.probability must be a number from 0 to 1; got ${describe(probability)}.`);
    }
    rule.probability = probability;
  }
  if (value["count"] !== undefined) rule.count = wholeNumberIn(`${where}.count`, value["count"], 1, Number.MAX_SAFE_INTEGER);

  const faults = (["result", "connectionReset", "timeout"] as const).filter((field) => rule[field] !== undefined);
  if (faults.length > 1) throw new TypeError(`${where} sets ${faults.join(" and ")}; a rule fails a request in one way at most.`);
  if (rule.timeout === true && rule.delayMs !== undefined) {
    throw new TypeError(`${where} sets timeout and delayMs; a timeout never answers, so a delay before it means nothing.`);
  }
  if (faults.length > 0 && rule.responseDelayMs !== undefined) {
    throw new TypeError(`${where} sets ${faults[0]} and responseDelayMs; only a request that reaches the service has a response to delay.`);
  }
  if (faults.length === 0 && rule.delayMs === undefined && rule.responseDelayMs === undefined) {
    throw new TypeError(`${where} has no effect; set delayMs, responseDelayMs, result, connectionReset or timeout.`);
  }
  return Object.freeze(rule);
}

function validateOptions(options: unknown): FaultInjectionPolicyOptions {
  assertObject("faultInjectionPolicy options", options);
  assertKnownFields("faultInjectionPolicy options", options, optionFields);
  if (!Array.isArray(options["rules"])) {
    throw new TypeError(`rules must be an array of fault rules; got ${describe(options["rules"])}.`);
  }
  if (options["seed"] !== undefined && (typeof options["seed"] !== "number" || !Number.isSafeInteger(options["seed"]))) {
    throw new RangeError(`seed must be a whole number; got ${describe(options["seed"])}.`);
  }
  optionalBoolean("enabled", options["enabled"]);
  return options as unknown as FaultInjectionPolicyOptions;
}

function abortError(): AbortError {
  return new AbortError("The operation was aborted.");
}

/** Waits `ms`, or rejects with an `AbortError` as soon as the request is aborted; leaves no timer or listener behind either way. */
function delay(request: PipelineRequest, ms: number): Promise<void> {
  const signal = request.abortSignal;
  if (signal?.aborted) return Promise.reject(abortError());
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Never answers: rejects with an `AbortError` when the request is aborted or its own `timeout` elapses, as the transport would. */
function hang(request: PipelineRequest): Promise<never> {
  const signal = request.abortSignal;
  if (signal?.aborted) return Promise.reject(abortError());
  return new Promise<never>((_resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const fail = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", fail);
      reject(abortError());
    };
    signal?.addEventListener("abort", fail, { once: true });
    if (request.timeout > 0) timer = setTimeout(fail, request.timeout);
  });
}

/** Holds a response for `ms`; on abort the response is dropped, its body stream (if any) destroyed so its socket is freed. */
async function holdResponse(request: PipelineRequest, response: PipelineResponse, ms: number): Promise<PipelineResponse> {
  try {
    await delay(request, ms);
  } catch (error) {
    (response.readableStreamBody as { destroy?: () => void } | undefined)?.destroy?.();
    throw error;
  }
  return response;
}

function syntheticResponse(request: PipelineRequest, result: FaultResult, bodyText: string): PipelineResponse {
  const headers = createHttpHeaders({
    ...(bodyText !== "" ? { [CosmosHeaders.contentType]: "application/json" } : {}),
    [CosmosHeaders.activityId]: randomUUID(),
    [CosmosHeaders.requestCharge]: "0",
    [CosmosHeaders.subStatus]: String(result.subStatus ?? 0),
  });
  for (const [name, value] of Object.entries(result.headers ?? {})) headers.set(name, value);
  return { status: result.status, headers, request, bodyAsText: bodyText };
}

/**
 * Injects faults into Cosmos DB requests: delays before sending, delayed
 * responses, synthetic responses (status and substatus), connection resets
 * and timeouts, by region and operation kind, with a probability drawn from a
 * seeded generator and an optional count. **It is for tests**: use it to see
 * how your code and the hedging policies behave when a region is slow or
 * failing. Never leave it in a production pipeline.
 *
 * Add it nearest the wire, after the hedging policies, so that every hedge
 * arm meets the rules of its own region:
 * `pipeline.addPolicy(faultInjectionPolicy(...), { afterPhase: "Sign" })`,
 * for example on `createHedgingHttpClient(...).pipeline`, sharing its
 * `regions`. Each injected fault is logged at `info` level, without headers.
 *
 * @example
 * ```ts
 * const hedgingClient = createHedgingHttpClient({ crossRegion: { threshold: 50 } });
 * const faults = faultInjectionPolicy({
 *   regions: hedgingClient.regions,
 *   rules: [{ id: "slow-west", region: "West US", operations: ["pointRead"], responseDelayMs: 2000 }],
 *   seed: 42,
 * });
 * hedgingClient.pipeline.addPolicy(faults, { afterPhase: "Sign" });
 * ```
 */
export function faultInjectionPolicy(options: FaultInjectionPolicyOptions): FaultInjectionPolicy {
  const validated = validateOptions(options);
  const regions = regionCacheOption(validated.regions);
  const seed = validated.seed ?? Math.floor(Math.random() * 2 ** 32);
  const random = seededRandom(seed);
  let enabled = validated.enabled ?? true;
  let installed: InstalledRule[] = [];
  let assignedIds = 0;

  const nextId = (taken: ReadonlySet<string>): string => {
    let id: string;
    do id = `rule${++assignedIds}`;
    while (taken.has(id));
    return id;
  };

  // Validates every rule before installing any, so a bad list leaves the policy as it was.
  const prepare = (entries: readonly { where: string; value: unknown }[]): InstalledRule[] => {
    const rules = entries.map(({ where, value }) => ({ where, rule: validateRule(where, value) }));
    const taken = new Set(installed.map((rule) => rule.id));
    for (const { where, rule } of rules) {
      if (rule.id === undefined) continue;
      if (taken.has(rule.id)) throw new RangeError(`${where}.id ${JSON.stringify(rule.id)} is already used by another rule.`);
      taken.add(rule.id);
    }
    return rules.map(({ rule }) => {
      const id = rule.id ?? nextId(taken);
      const region = rule.region;
      const names = region === undefined ? undefined : typeof region === "string" ? [region] : region;
      const result = rule.result;
      return {
        id,
        rule,
        regions: names === undefined ? undefined : new Set(names.map(normalizeRegionName)),
        operations: rule.operations === undefined ? undefined : new Set(rule.operations),
        bodyText:
          result === undefined
            ? ""
            : result.body !== undefined
              ? serializeBody("result.body", result.body)
              : result.status >= 400
                ? JSON.stringify(defaultErrorBody(id, result.status, result.subStatus ?? 0))
                : "",
        effect: describeEffect(rule),
        hits: 0,
      };
    });
  };

  const handle = (entry: InstalledRule): FaultRuleHandle => ({
    id: entry.id,
    rule: entry.rule,
    get hits() {
      return entry.hits;
    },
  });

  const choose = (operation: OperationKind, regionName: string | undefined): InstalledRule | undefined => {
    const regionKey = regionName === undefined ? undefined : normalizeRegionName(regionName);
    for (const entry of installed) {
      if (entry.operations !== undefined && !entry.operations.has(operation)) continue;
      if (entry.regions !== undefined && (regionKey === undefined || !entry.regions.has(regionKey))) continue;
      if (entry.rule.count !== undefined && entry.hits >= entry.rule.count) continue;
      // Draw only for real probabilities, so that adding a certain rule does not shift the sequence of the others.
      const probability = entry.rule.probability ?? 1;
      if (probability < 1 && !(random() < probability)) continue;
      return entry;
    }
    return undefined;
  };

  const forward = (request: PipelineRequest, next: SendRequest, operation: OperationKind): Promise<PipelineResponse> =>
    operation === "accountRead" ? sendObservingAccount(regions, request, next) : next(request);

  async function inject(entry: InstalledRule, request: PipelineRequest, next: SendRequest, operation: OperationKind): Promise<PipelineResponse> {
    const { rule } = entry;
    if (rule.delayMs !== undefined && rule.delayMs > 0) await delay(request, rule.delayMs);
    if (rule.timeout === true) return hang(request);
    if (rule.connectionReset === true) {
      throw new RestError(`read ECONNRESET (injected by ${faultInjectionPolicyName}, rule ${entry.id})`, { code: "ECONNRESET", request });
    }
    if (rule.result !== undefined) return syntheticResponse(request, rule.result, entry.bodyText);
    const response = await forward(request, next, operation);
    return rule.responseDelayMs !== undefined && rule.responseDelayMs > 0 ? holdResponse(request, response, rule.responseDelayMs) : response;
  }

  installed = prepare(validated.rules.map((value, index) => ({ where: `rules[${index}]`, value })));

  return {
    name: faultInjectionPolicyName,
    get enabled() {
      return enabled;
    },
    set enabled(value: boolean) {
      if (typeof value !== "boolean") throw new TypeError(`enabled must be true or false; got ${describe(value)}.`);
      enabled = value;
    },
    seed,
    get rules() {
      return installed.map(handle);
    },
    addRule(rule) {
      const [entry] = prepare([{ where: "rule", value: rule }]) as [InstalledRule];
      installed.push(entry);
      return handle(entry);
    },
    removeRule(id) {
      const before = installed.length;
      installed = installed.filter((entry) => entry.id !== id);
      return installed.length !== before;
    },
    clearRules() {
      installed = [];
    },
    hits(id) {
      const entry = installed.find((candidate) => candidate.id === id);
      if (entry === undefined) throw new RangeError(`No installed fault rule has the id ${describe(id)}.`);
      return entry.hits;
    },
    sendRequest(request, next) {
      const operation = classifyOperation(request);
      if (!enabled || installed.length === 0) return forward(request, next, operation);
      const region = regions.regionOf(request.url);
      const entry = choose(operation, region?.name);
      if (entry === undefined) return forward(request, next, operation);
      entry.hits++;
      logger.info(
        `Injecting ${entry.effect} into ${request.method} ${operation} to ${region?.name ?? "an unknown region"} (rule ${entry.id}, hit ${entry.hits}).`,
      );
      return inject(entry, request, next, operation);
    },
  };
}
