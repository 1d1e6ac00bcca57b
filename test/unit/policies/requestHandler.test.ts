import assert from "node:assert/strict";
import { createHttpHeaders } from "@azure/core-rest-pipeline";
import type { PipelineRequest, PipelineResponse, SendRequest } from "@azure/core-rest-pipeline";
import { hedgingRequestOptions } from "../../../src/client/requestOptions.js";
import { requestControlHeaders } from "../../../src/cosmos/headers.js";
import type { OperationKind } from "../../../src/cosmos/operationKind.js";
import { composeHandlers, policyOver } from "../../../src/policies/requestHandler.js";
import type { RequestHandler, RequestStep } from "../../../src/policies/requestHandler.js";
import type { RequestHedgingControls } from "../../../src/request/requestModel.js";
import { RegionCache } from "../../../src/topology/regionCache.js";
import { setRequestControls } from "../../../src/request/requestControls.js";
import { captureAzureLogs } from "../../support/logCapture.js";
import { eastUs, pointRead, query, requestTo, westUs } from "../../support/hedgingFixtures.js";

const answer: SendRequest = async (request) => ({ request, status: 200, headers: createHttpHeaders() });

function step(calls: string[], name: string, kinds: OperationKind[], routing?: RequestHedgingControls["routing"]): RequestStep {
  return {
    kinds: new Set(kinds),
    apply: (_request, operation, controls) => {
      calls.push(`${name} ${operation} ${JSON.stringify(controls)}`);
      return routing === undefined ? controls : { ...controls, routing };
    },
  };
}

function handler(calls: string[], name: string, kinds: OperationKind[]): RequestHandler {
  return {
    kinds: new Set(kinds),
    send: (request, next, operation, controls) => {
      calls.push(`${name} ${operation} ${JSON.stringify(controls)}`);
      return next(request);
    },
  };
}

describe("requestHandler", () => {
  const regions = new RegionCache({ topology: { readRegions: [eastUs, westUs] } });

  describe("composeHandlers", () => {
    it("reads the controls once (stripping their headers), runs each step that applies, then the first handler that sends the request", async () => {
      const calls: string[] = [];
      const send = composeHandlers(
        regions,
        [step(calls, "steer", ["pointRead", "query"], { sdkRegion: "East US" }), step(calls, "other", ["query"])],
        [handler(calls, "first", ["pointRead"]), handler(calls, "second", ["pointRead"])],
      );
      const request = pointRead(eastUs);
      for (const [name, value] of Object.entries(hedgingRequestOptions({ region: "West US" }).initialHeaders)) request.headers.set(name, String(value));
      const sent: PipelineRequest[] = [];
      await send(request, (outgoing) => (sent.push(outgoing), answer(outgoing)));
      assert.deepEqual(calls, ['steer pointRead {"region":"West US"}', 'first pointRead {"region":"West US","routing":{"sdkRegion":"East US"}}']);
      assert.equal(request.headers.has(requestControlHeaders.region), false, "no control header reaches the wire");
      assert.deepEqual(sent, [request]);
    });

    it("passes on a request that no handler sends, after the steps that apply", async () => {
      const calls: string[] = [];
      const send = composeHandlers(regions, [step(calls, "steer", ["query"])], [handler(calls, "reads", ["pointRead"])]);
      const response = await send(query(eastUs), answer);
      assert.equal(response.status, 200);
      assert.deepEqual(calls, ["steer query {}"]);
    });

    it("sends account reads itself, teaching the region cache, past every step and handler", async () => {
      const learning = new RegionCache();
      const calls: string[] = [];
      const send = composeHandlers(learning, [step(calls, "steer", ["accountRead"])], [handler(calls, "all", ["accountRead"])]);
      const locations = [{ name: "West US", databaseAccountEndpoint: westUs.endpoint }];
      await send(requestTo({ name: "global", endpoint: "https://acct.documents.azure.com:443/" }, "GET", ""), async (request): Promise<PipelineResponse> => ({
        request,
        status: 200,
        headers: createHttpHeaders(),
        bodyAsText: JSON.stringify({ readableLocations: locations, writableLocations: locations }),
      }));
      assert.deepEqual(calls, []);
      assert.deepEqual(learning.topology?.readRegions.map((region) => region.name), ["West US"]);
    });

    it("a step that throws rejects the request before anything is sent, rather than throwing", async () => {
      const failing: RequestStep = {
        kinds: new Set(["pointRead"]),
        apply: () => {
          throw new TypeError("no region left");
        },
      };
      let sent = 0;
      const pending = composeHandlers(regions, [failing], [])(pointRead(eastUs), (request) => (sent++, answer(request)));
      await assert.rejects(pending, /^TypeError: no region left$/);
      assert.equal(sent, 0);
    });
  });

  describe("composeHandlers in a withHedging client's layer (sdkOptionsExpected)", () => {
    it("does not hedge a request whose @azure/cosmos options are unknown (another object than the SDK's, carrying nothing of it), and warns once a composition", async () => {
      const calls: string[] = [];
      const send = composeHandlers(regions, [step(calls, "steer", ["pointRead"])], [handler(calls, "hedge", ["pointRead"])], true);
      const logs = captureAzureLogs("warning");
      try {
        for (let i = 0; i < 2; i++) await send(pointRead(eastUs), answer);
      } finally {
        logs.restore();
      }
      const unknown = '{"hedging":false}';
      assert.deepEqual(calls, [`steer pointRead ${unknown}`, `hedge pointRead ${unknown}`, `steer pointRead ${unknown}`, `hedge pointRead ${unknown}`]);
      assert.equal(logs.packageLines().filter((line) => line.includes("without the options @azure/cosmos gave the request it sent")).length, 1);
    });

    it("leaves a request with the SDK's options as they are", async () => {
      const calls: string[] = [];
      const send = composeHandlers(regions, [], [handler(calls, "hedge", ["pointRead"])], true);
      const request = pointRead(eastUs);
      setRequestControls(request, { sdkOptionsKnown: true });
      await send(request, answer);
      assert.deepEqual(calls, ['hedge pointRead {"sdkOptionsKnown":true}']);
    });
  });

  describe("policyOver", () => {
    it("a policy named as given, over one handler or one step", async () => {
      const calls: string[] = [];
      const asHandler = policyOver("aHandler", regions, handler(calls, "handler", ["pointRead"]));
      const asStep = policyOver("aStep", regions, step(calls, "step", ["pointRead"]));
      assert.equal(asHandler.name, "aHandler");
      assert.equal(asStep.name, "aStep");
      await asHandler.sendRequest(pointRead(eastUs), answer);
      await asStep.sendRequest(pointRead(eastUs), answer);
      assert.deepEqual(calls, ["handler pointRead {}", "step pointRead {}"]);
    });
  });
});
