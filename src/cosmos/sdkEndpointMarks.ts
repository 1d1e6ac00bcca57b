import { logger, RateLimitedLog } from "../log.js";
import { normalizeRegionName } from "../topology/regionNames.js";

/**
 * The part of `@azure/cosmos`'s `GlobalEndpointManager` (4.x, the request
 * context's `globalEndpointManager`) that marks a region as its own retry
 * policy does, typed structurally so that this package needs none of the
 * SDK's types.
 */
interface SdkEndpointManager {
  getReadLocations(): Promise<ReadonlyArray<{ readonly name?: unknown; readonly databaseAccountEndpoint?: unknown }>>;
  markCurrentLocationUnavailableForRead(diagnosticNode: unknown, endpoint: string): Promise<void>;
}

/** Makes the diagnostics node the SDK's mark takes: a fresh one, as the SDK makes for work no operation owns. */
type NodeFactory = () => unknown;

function isEndpointManager(value: unknown): value is SdkEndpointManager {
  if (typeof value !== "object" || value === null) return false;
  const manager = value as Partial<Record<keyof SdkEndpointManager, unknown>>;
  return typeof manager.getReadLocations === "function" && typeof manager.markCurrentLocationUnavailableForRead === "function";
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
 * Marks a region unavailable for reads in `@azure/cosmos`'s own endpoint
 * discovery, as its `EndpointDiscoveryRetryPolicy` does after a 403/1008,
 * a 403/3 or a request it could not send: for the SDK's own window (five
 * minutes in 4.10.1), which the SDK keeps, refreshes and ends itself.
 *
 * It stands for an answer the SDK would have acted on and never saw,
 * because a hedge won over it: the primary, which drained, heard it later.
 * Only deferring hedging (as for the breaker) would wait for the region to
 * answer so again, and a region that answers 403/1008 once and then slowly
 * would keep every read hedged where plain `@azure/cosmos` moved them all
 * away after one answer.
 *
 * It learns the SDK's endpoint manager from the request contexts its
 * request plugin sees. A `withHedging` result given to two `CosmosClient`s
 * shares one hedging client between two managers; which one's attempt was
 * hidden is then not known, so it marks nothing, and the watch defers.
 */
export class SdkEndpointMarks {
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
   * @returns false when nothing can be marked (no manager known yet, or two),
   *   and nothing was done.
   */
  markForReads(region: string, unmarked: () => void): boolean {
    const { manager, newNode } = this;
    if (manager === undefined || newNode === undefined || this.ambiguous) return false;
    const key = normalizeRegionName(region);
    void (async () => {
      try {
        const locations = await manager.getReadLocations();
        const location = locations.find((candidate) => typeof candidate.name === "string" && normalizeRegionName(candidate.name) === key);
        if (typeof location?.databaseAccountEndpoint !== "string") {
          unmarked();
          return;
        }
        await manager.markCurrentLocationUnavailableForRead(newNode(), location.databaseAccountEndpoint);
        this.marksLog.info(key, `Told @azure/cosmos's endpoint discovery that ${region} is unavailable for reads, as after the answer a hedge hid from it.`);
      } catch (error) {
        logger.warning(`Could not tell @azure/cosmos's endpoint discovery that ${region} is unavailable for reads (${error instanceof Error ? error.name : typeof error}); its requests go unhedged a while instead.`);
        unmarked();
      }
    })();
    return true;
  }
}
