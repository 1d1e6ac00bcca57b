import type { PipelineResponse } from "@azure/core-rest-pipeline";
import { CosmosHeaders } from "./headers.js";

/** Well-known Cosmos DB sub-status codes that the tables below name. */
export const SubStatus = {
  writeForbidden: 3,
  readSessionNotAvailable: 1002,
  databaseAccountNotFound: 1008,
  leaseNotFound: 1022,
} as const;

/** What an arm of a race produced: a response (of any status) or a thrown error. */
export type ArmResult =
  | { readonly response: PipelineResponse; readonly error?: undefined }
  | { readonly error: unknown; readonly response?: undefined };

/** The sub-status of a response, or 0 when it has none or it is not a number. */
export function subStatusOf(response: PipelineResponse): number {
  return subStatusOfHeader(response.headers.get(CosmosHeaders.subStatus));
}

/** An `x-ms-substatus` value as a number, or 0 when there is none or it is not a number. */
export function subStatusOfHeader(raw: string | undefined): number {
  const parsed = raw === undefined ? 0 : Number.parseInt(raw, 10);
  return Number.isFinite(parsed) ? parsed : 0;
}

/** The `x-ms-request-charge` of a response in request units, or `undefined` when it has none or it is not a number. */
export function requestChargeOf(response: PipelineResponse): number | undefined {
  return chargeOfHeader(response.headers.get(CosmosHeaders.requestCharge));
}

/** An `x-ms-request-charge` value in request units, or `undefined` when there is none or it is not a number. */
export function chargeOfHeader(value: string | undefined): number | undefined {
  const charge = Number.parseFloat(value ?? "");
  return Number.isFinite(charge) ? charge : undefined;
}

const finalErrorStatuses: ReadonlySet<number> = new Set([400, 401, 405, 409, 412, 413]);

/**
 * Data-plane hedging (.NET `IsFinalResult`): a final result ends the race;
 * anything else (403, 404 with a sub-status, 408, 410, 429, 449, 5xx and
 * transport errors) is transient and lets another region try.
 */
export function isFinalStatus(status: number, subStatus: number): boolean {
  if (status < 400) return true;
  if (finalErrorStatuses.has(status)) return true;
  return status === 404 && subStatus === 0;
}

/** {@link isFinalStatus} over an arm's result; a thrown (transport) error is transient. */
export function isFinalResult(result: ArmResult): boolean {
  if (result.response === undefined) return false;
  return isFinalStatus(result.response.status, subStatusOf(result.response));
}

/**
 * Whether an arm's result is a success (2xx, 304); `false` for an arm with no
 * result yet. The only answer a hedge may beat a primary in flight with, and
 * the only kind that may teach the ranking: a region that answers fast with
 * errors (a lagging replica's 404, a 401) must never look better for it.
 */
export function isSuccessResult(result: ArmResult | undefined): boolean {
  return result?.response !== undefined && result.response.status < 400;
}

/** The three outcome classes of metadata hedging, where the primary is authoritative. */
export type MetadataOutcome = "success" | "regionalFailure" | "definitive";

/**
 * Metadata hedging: success is a status below 400; a regional failure is what
 * another region could plausibly answer better (500, 503, 410/1022,
 * 403/1008); everything else, every 404 and 401 included, is definitive.
 */
export function classifyMetadataStatus(status: number, subStatus: number): MetadataOutcome {
  if (status < 400) return "success";
  if (status === 500 || status === 503) return "regionalFailure";
  if (status === 410 && subStatus === SubStatus.leaseNotFound) return "regionalFailure";
  if (status === 403 && subStatus === SubStatus.databaseAccountNotFound) return "regionalFailure";
  return "definitive";
}

/** {@link classifyMetadataStatus} over an arm's result; a transport error is a regional failure. */
export function classifyMetadataResult(result: ArmResult): MetadataOutcome {
  if (result.response === undefined) return "regionalFailure";
  return classifyMetadataStatus(result.response.status, subStatusOf(result.response));
}
