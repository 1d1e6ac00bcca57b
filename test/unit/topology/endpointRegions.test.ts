import assert from "node:assert/strict";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { EndpointRegions } from "../../../src/topology/endpointRegions.js";
import { databaseAccountBody, databaseAccountResponse } from "../../support/requests.js";
import type { LocationFixture } from "../../support/requests.js";

const westUs: LocationFixture = ["West US", "https://acct-westus.documents.azure.com:443/"];
const eastUs: LocationFixture = ["East US", "https://acct-eastus.documents.azure.com:443/"];
const globalEndpoint = "https://acct.documents.azure.com:443/";

/** A cache that has learned West US and East US from the account. */
function learnedCache(): RegionCache {
  const cache = new RegionCache();
  const response = databaseAccountResponse(globalEndpoint, databaseAccountBody({ read: [westUs, eastUs], write: [westUs] }));
  assert.equal(cache.observe(response.request, response), true);
  return cache;
}

describe("EndpointRegions", function () {
  const endpoints = [
    "https://acct-westus.documents.azure.com:443/",
    "https://acct-westus.documents.azure.com",
    "https://ACCT-EASTUS.documents.azure.com/",
    "https://acct-westus.documents.azure.com.evil.example:443/",
    "https://acct-westus.documents.azure.com:4430/",
    globalEndpoint,
    "not a url",
    "",
  ];

  it("answers as RegionCache.regionOf does for the URL the SDK builds on the endpoint, remembered or not", function () {
    const cache = learnedCache();
    const byUrl = endpoints.map((endpoint) => cache.regionOf(`${endpoint.replace(/\/+$/, "")}/dbs/db/colls/c/docs/1`)?.name);
    assert.deepEqual(byUrl, ["West US", "West US", "East US", undefined, undefined, undefined, undefined, undefined]);
    const regions = new EndpointRegions(cache);
    for (let pass = 0; pass < 3; pass++) assert.deepEqual(endpoints.map((endpoint) => regions.of(endpoint)?.name), byUrl);
  });

  it("forgets its answers when the topology changes, and stays bounded on many endpoints", function () {
    const cache = learnedCache();
    const regions = new EndpointRegions(cache);
    assert.equal(regions.of(westUs[1])?.name, "West US");
    assert.equal(regions.of("https://acct-northeurope.documents.azure.com:443/"), undefined, "not a region yet");
    cache.setTopology({ readRegions: [{ name: "Renamed", endpoint: westUs[1] }, { name: "North Europe", endpoint: "https://acct-northeurope.documents.azure.com:443/" }] });
    assert.equal(regions.of(westUs[1])?.name, "Renamed");
    assert.equal(regions.of("https://acct-northeurope.documents.azure.com:443/")?.name, "North Europe");
    assert.equal(regions.of(eastUs[1]), undefined, "a region that left the account is forgotten");
    for (let index = 0; index < 100; index++) assert.equal(regions.of(`https://host-${index}.example/`), undefined);
    assert.equal(regions.of(westUs[1])?.name, "Renamed");
  });
});
