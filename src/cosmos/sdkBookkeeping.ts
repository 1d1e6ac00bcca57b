import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { logger, RateLimitedLog } from "../log.js";
import { normalizeRegionName } from "../topology/regionNames.js";
import type { OperationDetection } from "../diagnostics/detection.js";
import { operationOfAttempt } from "../diagnostics/dispatchRecording.js";

/**
 * The part of `@azure/cosmos`'s `GlobalEndpointManager` (4.x, the request
 * context's `globalEndpointManager`) that marks a region as its own retry
 * policy does, typed structurally so that this package needs none of the
 * SDK's types.
 */
export interface SdkEndpointManager {
  /** Its read locations, from 4.5.0 on. */
  getReadLocations?(): Promise<ReadonlyArray<SdkLocation>>;
  /** The same list as a field, in every 4.x: what an SDK before 4.5.0 has. */
  readonly readableLocations?: unknown;
  markCurrentLocationUnavailableForRead(diagnosticNode: unknown, endpoint: string): Promise<void>;
}

/** A read location of the account, as the SDK lists it. */
type SdkLocation = { readonly name?: unknown; readonly databaseAccountEndpoint?: unknown };

/**
 * The part of `@azure/cosmos`'s `GlobalPartitionEndpointManager` (4.x, the
 * request context's `globalPartitionEndpointManager`) that its retry
 * policies call after a failure its partition-level circuit breaker counts.
 */
export interface SdkPartitionManager {
  tryPartitionLevelFailover(requestContext: SdkPartitionAttempt["context"], diagnosticNode: unknown): Promise<boolean>;
}

/**
 * What the SDK's partition-level circuit breaker needs of an attempt to
 * count a failure of it.
 */
export interface SdkPartitionAttempt {
  readonly manager: SdkPartitionManager;
  readonly context: {
    readonly operationType: string;
    readonly resourceType: string;
    readonly partitionKeyRangeId: string;
    readonly endpoint: string;
  };
}

/**
 * What the SDK's bookkeeping needs of an attempt whose outcome a hedge hid,
 * copied from the SDK's request context when the attempt lost to a hedge
 * (the SDK may reuse its context afterwards): its client's endpoint
 * manager, and what its breaker needs, where the context has them.
 */
export interface SdkAttemptFacts {
  readonly endpointManager: SdkEndpointManager | undefined;
  readonly partition: SdkPartitionAttempt | undefined;
}

const nothingMoved: readonly string[] = Object.freeze([]);

/** Makes the diagnostics node the SDK's calls take: a fresh one, as the SDK makes for work no operation owns. */
type NodeFactory = () => unknown;

function isEndpointManager(value: unknown): value is SdkEndpointManager {
  if (typeof value !== "object" || value === null) return false;
  const manager = value as Partial<Record<keyof SdkEndpointManager, unknown>>;
  return (typeof manager.getReadLocations === "function" || Array.isArray(manager.readableLocations)) && typeof manager.markCurrentLocationUnavailableForRead === "function";
}

function isPartitionManager(value: unknown): value is SdkPartitionManager {
  return typeof value === "object" && value !== null && typeof (value as Partial<Record<keyof SdkPartitionManager, unknown>>).tryPartitionLevelFailover === "function";
}

/** The SDK's request context of each attempt the hedging client took, by the request. */
const attemptContexts = new WeakMap<PipelineRequest, object>();
/** The SDK's request context of the operations whose attempts reach the hedging client through a pipeline of the SDK's own. */
const operationContexts = new WeakMap<OperationDetection, object>();

/**
 * Keeps the SDK's request context of an attempt, so that what a hedge hides
 * of it can be told to the very client that sent it (see
 * {@link SdkBookkeeping.attemptOf}): a map entry, gone with the request,
 * made only for an attempt that is raced or goes the full way (a plain read
 * that never hedges keeps none).
 */
export function keepAttemptContext(request: PipelineRequest, context: object): void {
  attemptContexts.set(request, context);
}

/**
 * Keeps the SDK's request context of an operation whose attempts cannot be
 * handed over (the SDK calls the hedging client through a pipeline of its
 * own, as with Entra ID credentials, after an `await`): every attempt of an
 * operation shares its context, and each is linked to its operation by a
 * header (see `linkAttempt`), so what a hedge hides of one is told to the
 * client that sent it all the same.
 */
export function keepOperationContext(operation: OperationDetection, context: object): void {
  operationContexts.set(operation, context);
}

/**
 * Forgets the context {@link keepOperationContext} kept for an operation
 * that has ended: a response or error the caller keeps holds its operation's
 * record, which must not hold the SDK's request context (and the request
 * body on it) as well. What a drained attempt needs of it was copied when
 * its race was decided.
 */
export function forgetOperationContext(operation: OperationDetection): void {
  operationContexts.delete(operation);
}

/** The SDK's request context of the attempt sent as `request`: kept for it, or for the operation it is linked to. */
function contextOf(request: PipelineRequest): Partial<Record<string, unknown>> | undefined {
  const kept = attemptContexts.get(request);
  if (kept !== undefined) return kept;
  const operation = operationOfAttempt(request);
  return operation === undefined ? undefined : operationContexts.get(operation);
}

/**
 * A factory of fresh root nodes of the class of a node the SDK handed a
 * plugin (`DiagnosticNodeInternal`, whose constructor takes the level, the
 * node type and the parent), so that the mark's account read is not added
 * to a finished operation's diagnostics, nor keeps one alive.
 */
function nodeFactoryOf(node: unknown): NodeFactory | undefined {
  if (typeof node !== "object" || node === null) return undefined;
  const { constructor: make, diagnosticLevel } = node as { constructor?: unknown; diagnosticLevel?: unknown };
  if (typeof make !== "function" || make === Object) return undefined;
  return () => new (make as new (level: unknown, type: string, parent: null) => unknown)(diagnosticLevel, "CLIENT_REQUEST_NODE", null);
}

/**
 * Tells `@azure/cosmos`'s own bookkeeping what a hedge hid from it: an
 * answer the SDK would have acted on and never saw, because a hedge won
 * over it, and which the primary, left to drain, heard later.
 *
 * - Its endpoint discovery: after a 403/1008, a 403/3 or a request it could
 *   not send, its `EndpointDiscoveryRetryPolicy` marks the region
 *   unavailable for reads for its own window (five minutes in 4.10.1),
 *   which the SDK keeps, refreshes and ends itself. Deferring hedging alone
 *   would wait for the region to answer so again, and a region that answers
 *   403/1008 once and then slowly would keep every read hedged where plain
 *   `@azure/cosmos` moved them all away after one answer.
 * - Its partition-level circuit breaker: after a 503, a 403/1008 or 403/3
 *   or a timeout, its retry policies count a failure of the attempt's
 *   partition and region (`tryPartitionLevelFailover`), and move the
 *   partition once enough are counted. Told so, it moves the partition at
 *   the same failure as plain, while the region's reads stay hedged.
 *
 * It is told with the hidden attempt's own request context, which names
 * its client's managers (a `withHedging` result given to two
 * `CosmosClient`s shares one hedging client between two). It learns the
 * class of the SDK's diagnostics nodes, and the client's endpoint manager,
 * from the request contexts its request plugin sees. An attempt sent
 * through a pipeline of the SDK's own (Entra ID auth) is told with its
 * operation's context (see {@link keepOperationContext}); one with no
 * context at all is marked with the client's one manager, or, once there
 * are two, not at all (the watch then defers).
 */
export class SdkBookkeeping {
  private manager: SdkEndpointManager | undefined;
  private newNode: NodeFactory | undefined;
  /** Two clients' managers seen: no mark can be told to the right one. */
  private ambiguous = false;
  /** A region removed from an account is heard by every read in flight: a line or a few per region, not one each. */
  private readonly marksLog = new RateLimitedLog(logger);

  /** The request plugin saw an attempt of the SDK's, with its context's endpoint manager and diagnostics node. */
  seen(manager: unknown, diagnosticNode: unknown): void {
    if (manager === this.manager || this.ambiguous) return;
    if (this.manager !== undefined) {
      this.ambiguous = isEndpointManager(manager);
      return;
    }
    const newNode = nodeFactoryOf(diagnosticNode);
    if (!isEndpointManager(manager) || newNode === undefined) return;
    this.manager = manager;
    this.newNode = newNode;
  }

  /**
   * Marks `region` unavailable for the SDK's reads, at once when it can:
   * looks up the SDK's endpoint of the region among its read locations and
   * hands it to the SDK's own mark, which refreshes the account first, as
   * after an answer it saw.
   * @param unmarked - called, at most once and later, when it turns out the
   *   SDK could not be told (no such region among its locations, or its mark
   *   failed); the caller then falls back to deferring hedging.
   * @param attempt - the hidden attempt's facts, whose endpoint manager is
   *   its own client's; without it, the one manager the client has seen.
   * @returns false when nothing can be marked (no manager known, or two and
   *   no attempt to say which), and nothing was done.
   */
  markForReads(region: string, unmarked: () => void, attempt?: SdkAttemptFacts): boolean {
    const { newNode } = this;
    const manager = attempt?.endpointManager ?? (this.ambiguous ? undefined : this.manager);
    if (manager === undefined || newNode === undefined) return false;
    const key = normalizeRegionName(region);
    void (async () => {
      try {
        // An SDK before 4.5.0 has no getReadLocations (hostile probe of 4.2.0 and 4.4.1: the region was never marked).
        const listed = manager.getReadLocations !== undefined ? await manager.getReadLocations() : manager.readableLocations;
        const locations: readonly SdkLocation[] = Array.isArray(listed) ? listed : [];
        const location = locations.find((candidate) => typeof candidate.name === "string" && normalizeRegionName(candidate.name) === key);
        if (typeof location?.databaseAccountEndpoint !== "string") {
          unmarked();
          return;
        }
        await manager.markCurrentLocationUnavailableForRead(newNode(), location.databaseAccountEndpoint);
        this.marksLog.info(key, `Told @azure/cosmos's endpoint discovery that ${region} is unavailable for reads, as after the answer a hedge hid from it.`);
      } catch (error) {
        logger.warning(`Could not tell @azure/cosmos's endpoint discovery that ${region} is unavailable for reads (${errorName(error)}); its requests go unhedged a while instead.`);
        unmarked();
      }
    })();
    return true;
  }

  /**
   * What the SDK's bookkeeping needs of the attempt sent as `request`,
   * copied from its request context now; `undefined` when no context was
   * kept for it or its operation (an attempt of no operation recorded).
   * Its `partition` is unset when the context lacks a field the breaker
   * reads (the breaker is off: the SDK resolves no partition).
   */
  attemptOf(request: PipelineRequest): SdkAttemptFacts | undefined {
    const context = contextOf(request);
    if (context === undefined) return undefined;
    const { globalEndpointManager, globalPartitionEndpointManager: manager, operationType, resourceType, partitionKeyRangeId, endpoint } = context;
    const partition =
      isPartitionManager(manager) && typeof operationType === "string" && typeof resourceType === "string" && typeof partitionKeyRangeId === "string" && typeof endpoint === "string"
        ? { manager, context: { operationType, resourceType, partitionKeyRangeId, endpoint } }
        : undefined;
    return { endpointManager: isEndpointManager(globalEndpointManager) ? globalEndpointManager : undefined, partition };
  }

  /**
   * The endpoints `@azure/cosmos`'s partition-level circuit breaker moved
   * the partition of the attempt sent as `request` off, for as long as it
   * lists them (until its failback, five minutes in 4.10.1): a hedge there
   * goes where the breaker found the partition failing. Asked when a hedge
   * is due, which may be after the breaker moved the partition on from the
   * region the attempt went to. Empty when the context was not kept, the
   * breaker moved nothing, or the SDK no longer has the (`@hidden`) map of
   * its moves.
   */
  partitionMovedOff(request: PipelineRequest): readonly string[] {
    const context = contextOf(request);
    if (context === undefined) return nothingMoved;
    const { globalPartitionEndpointManager: manager, partitionKeyRangeId } = context;
    const moves = (manager as { partitionKeyRangeToLocationForReadAndWrite?: unknown } | null | undefined)?.partitionKeyRangeToLocationForReadAndWrite;
    if (!(moves instanceof Map)) return nothingMoved;
    // Counted failures make an entry before any move, with no endpoint listed. A move stays listed after the SDK's
    // counts reset, when its reads go back to the first region it moved off (the primary then, never left out of a
    // race): the other regions listed failed for this partition within the breaker's window all the same.
    const failed = (moves.get(partitionKeyRangeId) as { failedEndPoints?: unknown } | undefined)?.failedEndPoints;
    if (!Array.isArray(failed)) return nothingMoved;
    return failed.filter((endpoint): endpoint is string => typeof endpoint === "string");
  }

  /**
   * Counts a failure of `attempt` in the SDK's partition-level circuit
   * breaker, as the SDK's retry policy does after a failure it saw; the
   * breaker moves the partition itself once it has counted enough.
   * @param counted - called once, later, with what the breaker did: moved
   *   the partition, counted the failure only, or failed (the caller then
   *   falls back to deferring hedging).
   * @returns false when nothing can be counted (no diagnostics node class
   *   known yet), and nothing was done.
   */
  countFailure(attempt: SdkPartitionAttempt, counted: (outcome: "moved" | "counted" | "failed") => void): boolean {
    const { newNode } = this;
    if (newNode === undefined) return false;
    void (async () => {
      try {
        const moved = await attempt.manager.tryPartitionLevelFailover(attempt.context, newNode());
        if (moved) this.marksLog.info(`partition ${attempt.context.endpoint}`, `@azure/cosmos's partition-level circuit breaker, told of failures a hedge hid from it, moved a partition off ${attempt.context.endpoint}.`);
        counted(moved ? "moved" : "counted");
      } catch (error) {
        logger.warning(`Could not tell @azure/cosmos's partition-level circuit breaker of a failure a hedge hid from it (${errorName(error)}); the region's requests go unhedged a while instead.`);
        counted("failed");
      }
    })();
    return true;
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
