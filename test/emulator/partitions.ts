import { createRequire } from "node:module";
import path from "node:path";

/**
 * `@azure/cosmos`'s own partition key hashing (`hashPartitionKey`, not
 * exported by the package): the emulator must place a key in the same range
 * the SDK routes it to, and only the SDK's hash is sure to agree with the SDK.
 */
type HashPartitionKey = (partitionKey: unknown[], definition: { paths: string[]; kind?: string; version?: number }) => string;

let sdkHash: HashPartitionKey | undefined;

function hashOf(values: unknown[], paths: string[]): string {
  if (sdkHash === undefined) {
    const require = createRequire(import.meta.url);
    const sdkDir = path.dirname(require.resolve("@azure/cosmos"));
    sdkHash = (require(path.join(sdkDir, "utils", "hashing", "hash.js")) as { hashPartitionKey: HashPartitionKey }).hashPartitionKey;
  }
  return sdkHash(values, { paths, kind: "Hash", version: 2 });
}

/** One partition key range as the service lists it: `[minInclusive, maxExclusive)` of the hashed keys. */
export interface EmulatedRange {
  readonly id: string;
  readonly minInclusive: string;
  readonly maxExclusive: string;
}

/** The most ranges an emulated container may be split into. */
export const maxPartitionKeyRanges = 16;

/** What a query plan must not plan as a plain fan-out: the emulator plans simple queries only. */
const queryFeatures = /\b(ORDER\s+BY|GROUP\s+BY|DISTINCT|TOP|OFFSET|LIMIT|VALUE|COUNT|SUM|MIN|MAX|AVG)\b/i;

/**
 * How the emulated account splits every container into partition key
 * ranges, as the service does once a container outgrows one physical
 * partition: the backend keeps one store, and the regional proxies make
 * the split visible the way the SDK sees it. The container definitions say
 * hash version 2 (what the .NET and Java SDKs create containers with; the
 * backend says none, and the SDK would hash with version 1), the
 * partition key range feed lists `count` ranges splitting the hash space
 * evenly, a feed page asked of one range (`x-ms-documentdb-partitionkeyrangeid`)
 * holds only that range's documents, and a query plan is answered for
 * simple queries (the backend has none), so that the SDK fans a
 * cross-partition query out range by range (`forceQueryPlan`) as it does
 * against the service. A range may be split at runtime ({@link PartitionLayout.splitRange}).
 */
export class PartitionLayout {
  private readonly current: EmulatedRange[];
  /** The ranges split since the start: a request naming one is answered 410/1002. */
  private readonly gone = new Set<string>();
  /** The ranges each range was split from, the oldest first, as the service lists them; none for a range of the start. */
  private readonly ancestry = new Map<string, readonly string[]>();
  /** The partition key paths of the containers seen, by container link (`dbs/x/colls/y`). */
  private readonly paths = new Map<string, string[]>();

  constructor(private readonly count: number) {
    if (!(Number.isInteger(count) && count >= 1 && count <= maxPartitionKeyRanges)) {
      throw new RangeError(`partitionKeyRanges must be a whole number from 1 to ${maxPartitionKeyRanges}; got ${count}`);
    }
    // An even split of the version 2 hash space, [00, 40) (see positionOf).
    const bound = (index: number): string => (index === 0 ? "" : index === count ? "FF" : Math.floor((0x40 * index) / count).toString(16).toUpperCase().padStart(2, "0"));
    this.current = Array.from({ length: count }, (_, index) => ({ id: String(index), minInclusive: bound(index), maxExclusive: bound(index + 1) }));
  }

  /** The ranges the containers are split into now, in the order of the hash space. */
  get ranges(): readonly EmulatedRange[] {
    return this.current;
  }

  /** Whether the layout changes anything: one range is what the backend already says. */
  get split(): boolean {
    return this.count > 1;
  }

  /** Whether a range id is one that was split: a request naming it is answered 410/1002, as the service answers it. */
  isGone(id: string): boolean {
    return this.gone.has(id);
  }

  /**
   * Splits a range in two at the middle of its span, as the service splits a
   * partition that outgrew itself: the range feed then lists the two new
   * ranges (naming it among their parents) instead of it. @returns their ids.
   */
  splitRange(id: string): [string, string] {
    // A container of one range keeps the backend's definition, whose hash version the SDK has read already.
    if (!this.split) throw new RangeError("only a container split from the start (partitionKeyRanges of 2 or more) can split a range");
    const index = this.current.findIndex((range) => range.id === id);
    const range = this.current[index];
    if (range === undefined) throw new RangeError(`no partition key range ${JSON.stringify(id)} to split; have ${this.current.map((known) => known.id).join(", ")}`);
    const low = positionOf(range.minInclusive);
    const high = positionOf(range.maxExclusive);
    if (high - low < 2) throw new RangeError(`partition key range ${JSON.stringify(id)} is too narrow to split`);
    const middle = Math.floor((low + high) / 2).toString(16).toUpperCase().padStart(4, "0");
    const next = Math.max(...this.current.map((known) => Number(known.id)), ...[...this.gone].map(Number)) + 1;
    const children: [string, string] = [String(next), String(next + 1)];
    this.current.splice(index, 1, { id: children[0], minInclusive: range.minInclusive, maxExclusive: middle }, { id: children[1], minInclusive: middle, maxExclusive: range.maxExclusive });
    const parents = [...(this.ancestry.get(id) ?? []), id];
    for (const child of children) this.ancestry.set(child, parents);
    this.gone.add(id);
    return children;
  }

  /** The range a hashed key falls in. */
  rangeOfHash(hash: string): string {
    for (const range of this.current) if (hash >= range.minInclusive && (range.maxExclusive === "FF" || hash < range.maxExclusive)) return range.id;
    return this.current[this.current.length - 1]!.id;
  }

  /** The range of a partition key value, as sent in `x-ms-documentdb-partitionkey` (a JSON array). */
  rangeOfKeyHeader(header: string, containerLink: string | undefined): string | undefined {
    const values = keyOfHeader(header);
    return values === undefined ? undefined : this.rangeOfHash(hashOf(values, this.pathsOf(containerLink)));
  }

  /** The range a request is for: the one it names, or the one its partition key hashes into; `undefined` for neither. */
  rangeOfRequest(header: (name: string) => string | undefined, requestPath: string): string | undefined {
    const named = header("x-ms-documentdb-partitionkeyrangeid");
    if (named !== undefined) return named;
    const key = header("x-ms-documentdb-partitionkey");
    return key === undefined ? undefined : this.rangeOfKeyHeader(key, containerLinkOf(requestPath));
  }

  /** The backend's partition key range feed, listing this layout's ranges instead of its one. */
  rewriteRanges(body: Buffer): Buffer {
    const feed = parse(body) as { PartitionKeyRanges?: Array<Record<string, unknown>>; _count?: number } | undefined;
    const [template] = feed?.PartitionKeyRanges ?? [];
    if (feed === undefined || template === undefined) return body;
    feed.PartitionKeyRanges = this.current.map((range) => ({ ...template, ...range, _rid: `${String(template["_rid"] ?? "range")}${range.id}`, parents: this.ancestry.get(range.id) ?? [] }));
    feed._count = this.current.length;
    return Buffer.from(JSON.stringify(feed));
  }

  /**
   * Notes the partition key paths of a container definition (or a list of
   * them), by which feed pages are filtered; where the layout splits the
   * containers, the definition then says hash version 2.
   */
  noteContainers(body: Buffer, requestPath: string): Buffer {
    const parsed = parse(body) as Record<string, unknown> | undefined;
    if (parsed === undefined) return body;
    const database = /^\/?dbs\/([^/]+)/.exec(requestPath)?.[1];
    const containers = Array.isArray(parsed["DocumentCollections"]) ? (parsed["DocumentCollections"] as Array<Record<string, unknown>>) : [parsed];
    let changed = false;
    for (const container of containers) {
      const key = container["partitionKey"] as { paths?: unknown } | undefined;
      if (typeof key !== "object" || key === null || !Array.isArray(key.paths) || typeof container["id"] !== "string") continue;
      if (database !== undefined) this.paths.set(`dbs/${database}/colls/${container["id"]}`, key.paths as string[]);
      if (!this.split) continue;
      Object.assign(key, { kind: "Hash", version: 2 });
      changed = true;
    }
    return changed ? Buffer.from(JSON.stringify(parsed)) : body;
  }

  /** A feed page asked of one range, keeping only the documents whose partition key falls in it. */
  filterFeed(body: Buffer, rangeId: string, requestPath: string): Buffer {
    const paths = this.pathsOf(containerLinkOf(requestPath));
    // A document without its key (a projection) is kept by range "0", so that a fan-out returns it once.
    return keepDocuments(body, (document) => {
      const key = keyOfDocument(document, paths);
      return (key === undefined ? "0" : this.rangeOfHash(hashOf(key, paths))) === rangeId;
    });
  }

  /**
   * A feed page asked of one partition key (`x-ms-documentdb-partitionkey`,
   * a JSON array), keeping only that key's documents: the backend ignores
   * the header and pages over the whole container. A document without its
   * key (a projection) is kept, as nothing tells where it belongs.
   */
  filterFeedByKey(body: Buffer, keyHeader: string, requestPath: string): Buffer {
    const wanted = keyOfHeader(keyHeader);
    if (wanted === undefined) return body;
    const wantedJson = JSON.stringify(wanted);
    const paths = this.pathsOf(containerLinkOf(requestPath));
    return keepDocuments(body, (document) => {
      const key = keyOfDocument(document, paths);
      return key === undefined || JSON.stringify(key) === wantedJson;
    });
  }

  /**
   * The query plan of a simple query (no ordering, grouping, aggregate,
   * `DISTINCT`, `TOP`, `OFFSET`, `VALUE`): a plain fan-out over the whole
   * key space. `undefined` for any other, which the backend answers as it
   * always has.
   */
  queryPlanFor(requestBody: Buffer): Buffer | undefined {
    const query = (parse(requestBody) as { query?: unknown } | undefined)?.query;
    if (typeof query !== "string" || queryFeatures.test(query)) return undefined;
    const plan = {
      partitionedQueryExecutionInfoVersion: 2,
      queryInfo: {
        distinctType: "None",
        top: null,
        offset: null,
        limit: null,
        orderBy: [],
        orderByExpressions: [],
        groupByExpressions: [],
        groupByAliases: [],
        aggregates: [],
        groupByAliasToAggregateType: {},
        rewrittenQuery: "",
        hasSelectValue: false,
        hasNonStreamingOrderBy: false,
      },
      queryRanges: [{ min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false }],
    };
    return Buffer.from(JSON.stringify(plan));
  }

  private pathsOf(containerLink: string | undefined): string[] {
    return (containerLink === undefined ? undefined : this.paths.get(containerLink)) ?? ["/pk"];
  }
}

/**
 * Where a range bound lies in the hash space, on a scale of 0 to 0x4000:
 * version 2 hashes start with a byte below 0x40 (its top two bits are
 * cleared), so the split is of [00, 40), and "FF", the end of every key
 * space, is the end of this one.
 */
function positionOf(bound: string): number {
  if (bound === "") return 0;
  if (bound === "FF") return 0x4000;
  return Number.parseInt(bound.padEnd(4, "0").slice(0, 4), 16);
}

function parse(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** A feed page with only the documents `keep` keeps, its count set to match; the body as it is when it holds no page. */
function keepDocuments(body: Buffer, keep: (document: unknown) => boolean): Buffer {
  const page = parse(body) as { Documents?: unknown[]; _count?: number } | undefined;
  if (page === undefined || !Array.isArray(page.Documents)) return body;
  page.Documents = page.Documents.filter(keep);
  page._count = page.Documents.length;
  return Buffer.from(JSON.stringify(page));
}

/** The partition key values of `x-ms-documentdb-partitionkey` (a JSON array); `undefined` when it holds none. */
function keyOfHeader(header: string): unknown[] | undefined {
  const values = parse(Buffer.from(header));
  return Array.isArray(values) ? values : undefined;
}

/** A document's partition key values at `paths`; `undefined` when it lacks one (a projection). */
function keyOfDocument(document: unknown, paths: readonly string[]): unknown[] | undefined {
  const values = paths.map((keyPath) => valueAt(document, keyPath));
  return values.some((value) => value === undefined) ? undefined : values;
}

function valueAt(document: unknown, keyPath: string): unknown {
  let value = document;
  for (const part of keyPath.split("/").filter((segment) => segment !== "")) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function containerLinkOf(requestPath: string): string | undefined {
  const match = /^\/?(dbs\/[^/]+\/colls\/[^/?]+)/.exec(requestPath);
  return match?.[1];
}
