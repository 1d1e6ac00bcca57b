import type { Container, FeedOptions, ItemDefinition, RequestOptions } from "@azure/cosmos";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import type { RequestHedgingOptions } from "../../../src/client/requestOptions.js";
import type { OperationKind } from "../../../src/cosmos/operationKind.js";
import type { Emulator, FaultRule } from "../../emulator/index.js";

export const regionNames = ["East US", "West US", "North Europe"];
export const items: ItemDefinition[] = Array.from({ length: 6 }, (_, i) => ({ id: `item-${i}`, pk: `pk-${i % 3}`, value: i }));
export const warmUp = { id: "item-0", pk: "pk-0" };
export const requestTimeout = 1_000;

export type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly code: unknown };
export interface Run {
  readonly outcome: Outcome;
  readonly regions: readonly string[];
}

/**
 * The hedging choices as control headers alone, merged into `requestOptions`: exclusions the SDK is not told
 * of (as with `withRequestHedgingOptions` or the client's own), which the steering walks below it. The full
 * `hedgingRequestOptions` also hands them to the SDK as `excludedLocations`, and then the SDK walks itself.
 */
export function steeredOnly<T extends RequestOptions & FeedOptions>(options: RequestHedgingOptions, requestOptions: T = {} as T): T {
  const { initialHeaders } = hedgingRequestOptions(options);
  return { ...requestOptions, initialHeaders: { ...requestOptions.initialHeaders, ...initialHeaders } };
}

export type Operation = (container: Container, options: RequestOptions) => Promise<unknown>;

export const pointRead: Operation = async (container, options) => {
  const { resource, statusCode } = await container.item("item-1", "pk-1").read(options);
  return { statusCode, id: resource?.id };
};

export async function outcomeOf(operation: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await operation() };
  } catch (error) {
    return { ok: false, code: (error as { code?: unknown }).code ?? (error as Error).name };
  }
}

export function arrivals(emulator: Emulator, kinds: readonly OperationKind[]): string[] {
  return regionNames
    .flatMap((name) => emulator.region(name).requests.filter((request) => kinds.includes(request.kind)).map((request) => ({ name, at: request.at })))
    .sort((a, b) => a.at - b.at)
    .map((arrival) => arrival.name);
}

/** Installs `faults` (region -> rule) for one run, counters from zero. */
export async function runWith(emulator: Emulator, faults: Record<string, FaultRule | FaultRule[]>, kinds: readonly OperationKind[], operation: () => Promise<unknown>): Promise<Run> {
  const handles = Object.entries(faults).flatMap(([region, rules]) =>
    (Array.isArray(rules) ? rules : [rules]).map((rule) => emulator.region(region).addFault({ ...rule, operations: [...kinds] })),
  );
  emulator.resetCounters();
  try {
    const outcome = await outcomeOf(operation);
    return { outcome, regions: arrivals(emulator, kinds) };
  } finally {
    for (const handle of handles) handle.remove();
  }
}
