import assert from "node:assert/strict";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { createHedgingHttpClient } from "../../../src/client/hedgingHttpClient.js";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import { withHedging } from "../../../src/client/withHedging.js";
import { hasControlCharacter } from "../../../src/options.js";
import { eastUs, westUs } from "../../support/hedgingFixtures.js";

/** Every list of region names, client-wide or per request, is held to one rule, and each error names the option and the value. */
describe("the one region-name rule", () => {
  const bad: ReadonlyArray<readonly [string, unknown, RegExp]> = [
    ["a line feed", ["West US\nx-ms-foo: 1"], /\[0\] must not contain CR, LF or another control character; got "West US\\nx-ms-foo: 1"\./],
    ["a DEL", ["East US", "West\u007fUS"], /\[1\] must not contain CR, LF or another control character/],
    ["a C1 control (NEL)", ["West\u0085US"], /\[0\] must not contain CR, LF or another control character/],
    ["a C1 control (CSI)", ["East US", "West\u009b2JUS"], /\[1\] must not contain CR, LF or another control character/],
    ["a name longer than 128 characters", ["x".repeat(129)], /\[0\] is longer than 128 characters; got "x{80}…"\./],
    ["a blank name", [" "], /\[0\] must be a non-empty region name; got " "\./],
    ["more than 256 names", Array.from({ length: 257 }, (_, i) => `r${i}`), / lists 257 regions, more than 256\./],
    ["a string", "West US", / must be an array of region names; got "West US"\./],
  ];

  const entryPoints: ReadonlyArray<readonly [string, string, (value: unknown) => unknown]> = [
    ["createHedgingHttpClient", "preferredRegions", (value) => createHedgingHttpClient({ preferredRegions: value as string[] })],
    ["createHedgingHttpClient", "excludedRegions", (value) => createHedgingHttpClient({ excludedRegions: value as string[] })],
    ["withHedging", "preferredRegions", (value) => withHedging({ endpoint: eastUs.endpoint }, { preferredRegions: value as string[] })],
    ["withHedging", "excludedRegions", (value) => withHedging({ endpoint: eastUs.endpoint }, { excludedRegions: value as string[] })],
    [
      "withHedging",
      "connectionPolicy.preferredLocations",
      (value) => withHedging({ endpoint: eastUs.endpoint, connectionPolicy: { preferredLocations: value as string[] } }),
    ],
    ["new RegionCache", "preferredRegions", (value) => new RegionCache({ preferredRegions: value as string[] })],
    ["RegionCache.setExcludedRegions", "excludedRegions", (value) => new RegionCache().setExcludedRegions(value as string[])],
    ["RegionCache.setPreferredRegions", "preferredRegions", (value) => new RegionCache().setPreferredRegions(value as string[])],
    ["hedgingRequestOptions", "excludedRegions", (value) => hedgingRequestOptions({ excludedRegions: value as string[] })],
  ];

  for (const [where, option, use] of entryPoints) {
    for (const [label, value, message] of bad) {
      it(`${where} refuses ${option} with ${label}, naming the option`, () => {
        assert.throws(
          () => use(value),
          (error: unknown) => error instanceof TypeError && error.message.startsWith(option) && message.test(error.message),
        );
      });
    }
  }

  it("shows a refused name with every control character escaped, C1 and DEL included, so the error cannot drive a terminal or split a log line", () => {
    assert.throws(
      () => hedgingRequestOptions({ region: "West\u009b2J\u0085US\u007f\n" }),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.endsWith('got "West\\u009b2J\\u0085US\\u007f\\n".') &&
        !hasControlCharacter(error.message),
    );
  });

  it("holds a single region name to the same rule, per request and when demoting", () => {
    assert.throws(() => hedgingRequestOptions({ region: "West US\r" }), /^TypeError: region must not contain CR, LF or another control character/);
    const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });
    assert.throws(() => regions.demoteRegion("East US", "West\nUS"), /^TypeError: demoteRegion arguments\[1\] must not contain CR, LF/);
    assert.throws(() => regions.restoreRegion("x".repeat(129)), /^TypeError: restoreRegion argument\[0\] is longer than 128 characters/);
  });

  it("accepts what the rule allows, in any case and spacing, up to its limits", () => {
    const names = Array.from({ length: 256 }, (_, i) => `Region ${i}`);
    assert.doesNotThrow(() => new RegionCache({ preferredRegions: names, excludedRegions: ["x".repeat(128), " west us "] }));
  });
});
