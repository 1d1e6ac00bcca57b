import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse } from "@azure/core-rest-pipeline";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { sendObservingAccount } from "../../../src/topology/accountObservation.js";
import { eastUs, requestTo, westUs } from "../../support/hedgingFixtures.js";

function accountResponse(request: PipelineRequest): PipelineResponse {
  const locations = [eastUs, westUs].map((region) => ({ name: region.name, databaseAccountEndpoint: region.endpoint }));
  return { request, status: 200, headers: createHttpHeaders(), bodyAsText: JSON.stringify({ readableLocations: locations, writableLocations: locations.slice(0, 1) }) };
}

describe("sendObservingAccount", () => {
  it("sends the account read as it is, returns its response, and teaches the region cache", async () => {
    const regions = new RegionCache();
    const request = requestTo({ name: "global", endpoint: "https://acct.documents.azure.com:443/" }, "GET", "");
    const sent: PipelineRequest[] = [];
    const response = await sendObservingAccount(regions, request, async (outgoing) => {
      sent.push(outgoing);
      return accountResponse(outgoing);
    });
    assert.deepEqual(sent, [request]);
    assert.equal(response.request, request);
    assert.deepEqual(regions.topology?.readRegions.map((region) => region.name), ["East US", "West US"]);
  });

  it("a failed read teaches nothing and fails as it failed", async () => {
    const regions = new RegionCache();
    const failure = new Error("socket hang up");
    await assert.rejects(
      sendObservingAccount(regions, requestTo(eastUs, "GET", ""), async () => Promise.reject(failure)),
      (error: unknown) => error === failure,
    );
    assert.equal(regions.topology, undefined);
  });
});
