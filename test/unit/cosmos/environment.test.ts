import assert from "node:assert/strict";
import { AzureLogger, getLogLevel, setLogLevel } from "@azure/logger";
import { metadataHedgingEnvironmentVariable, readBooleanSwitch } from "../../../src/cosmos/environment.js";
import { hasControlCharacter } from "../../../src/options.js";

describe("readBooleanSwitch", function () {
  const savedEnv = { ...process.env };
  let lines: string[];
  let previousLog: typeof AzureLogger.log;
  let previousLevel: ReturnType<typeof getLogLevel>;
  // The warned-value memory is process-wide; the root hooks empty it before each test.
  const name = "COSMOS_HEDGING_TEST_SWITCH";

  beforeEach(function () {
    lines = [];
    previousLog = AzureLogger.log;
    previousLevel = getLogLevel();
    setLogLevel("warning");
    AzureLogger.log = (...args: unknown[]) => {
      lines.push(args.map(String).join(" "));
    };
  });

  afterEach(function () {
    AzureLogger.log = previousLog;
    setLogLevel(previousLevel);
    for (const key of Object.keys(process.env)) {
      if (!(key in savedEnv)) delete process.env[key];
    }
    Object.assign(process.env, savedEnv);
  });

  it("names the metadata hedging variable", function () {
    assert.equal(metadataHedgingEnvironmentVariable, "AZURE_COSMOS_METADATA_HEDGING_ENABLED");
  });

  const accepted: Array<[string, boolean]> = [
    ["true", true],
    ["TRUE", true],
    ["True", true],
    [" true ", true],
    ["\ttRuE\n", true],
    ["false", false],
    ["FALSE", false],
    ["False", false],
    ["  false", false],
  ];
  for (const [raw, expected] of accepted) {
    it(`reads ${JSON.stringify(raw)} as ${expected} without a warning`, function () {
      process.env[name] = raw;
      assert.equal(readBooleanSwitch(name), expected);
      assert.deepEqual(lines, []);
    });
  }

  it("is undefined when the variable is unset", function () {
    delete process.env[name];
    assert.equal(readBooleanSwitch(name), undefined);
    assert.deepEqual(lines, []);
  });

  for (const raw of ["", "   "]) {
    it(`is undefined without a warning for ${JSON.stringify(raw)}`, function () {
      process.env[name] = raw;
      assert.equal(readBooleanSwitch(name), undefined);
      assert.deepEqual(lines, []);
    });
  }

  for (const raw of ["yes", "1", "0", "on", "truee", "t", "false!"]) {
    it(`ignores ${JSON.stringify(raw)} with one warning naming the variable and the accepted values`, function () {
      process.env[name] = raw;
      assert.equal(readBooleanSwitch(name), undefined);
      assert.equal(readBooleanSwitch(name), undefined);
      assert.equal(readBooleanSwitch(name), undefined);
      assert.equal(lines.length, 1, lines.join("\n"));
      assert.ok(lines[0]?.includes(name), lines[0]);
      assert.ok(lines[0]?.includes(JSON.stringify(raw)), lines[0]);
      assert.match(lines[0] ?? "", /accepted values are "true" and "false"/);
    });
  }

  it("shows a bad value with its control characters escaped, C1 included, so the warning cannot drive a terminal", function () {
    process.env[name] = "tru\u009b2Je";
    assert.equal(readBooleanSwitch(name), undefined);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.ok(lines[0]?.includes('"tru\\u009b2Je"'), lines[0]);
    assert.ok(!hasControlCharacter(lines[0] ?? ""), lines[0]);
  });

  it("warns once per distinct value, again for a new value, not again for an old one", function () {
    process.env[name] = "yes";
    readBooleanSwitch(name);
    process.env[name] = "no";
    readBooleanSwitch(name);
    process.env[name] = "yes";
    readBooleanSwitch(name);
    process.env[name] = "true";
    assert.equal(readBooleanSwitch(name), true);
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.ok(lines[0]?.includes('"yes"'));
    assert.ok(lines[1]?.includes('"no"'));
  });

  it("keeps the warnings of two variables with the same value apart", function () {
    const other = `${name}_OTHER`;
    process.env[name] = "enabled";
    process.env[other] = "enabled";
    readBooleanSwitch(name);
    readBooleanSwitch(other);
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.ok(lines[1]?.includes(other));
  });

  it("warns about at most 64 distinct values, so that a flood of typos cannot grow its memory", function () {
    for (let i = 0; i < 70; i++) {
      process.env[name] = `typo-${i}`;
      readBooleanSwitch(name);
    }
    assert.equal(lines.length, 64, lines.slice(-3).join("\n"));
    assert.ok(lines[63]?.includes('"typo-63"'));
    process.env[name] = "typo-0";
    readBooleanSwitch(name);
    assert.equal(lines.length, 64, "an old value is not warned about again either");
  });

  it("truncates a long value in the warning", function () {
    process.env[name] = "x".repeat(500);
    readBooleanSwitch(name);
    assert.equal(lines.length, 1);
    assert.ok(lines[0]?.includes(`"${"x".repeat(64)}"`));
    assert.ok(!lines[0]?.includes("x".repeat(65)));
  });

  it("reads the metadata hedging variable from the live environment", function () {
    process.env[metadataHedgingEnvironmentVariable] = "False";
    assert.equal(readBooleanSwitch(metadataHedgingEnvironmentVariable), false);
    process.env[metadataHedgingEnvironmentVariable] = "true";
    assert.equal(readBooleanSwitch(metadataHedgingEnvironmentVariable), true);
    delete process.env[metadataHedgingEnvironmentVariable];
    assert.equal(readBooleanSwitch(metadataHedgingEnvironmentVariable), undefined);
  });
});
