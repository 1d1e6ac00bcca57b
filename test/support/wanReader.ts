/**
 * A user's script, run as a child process by the WAN integration test: one
 * hedged read over the WAN (its East US primary held back, so that the
 * hedge wins and the primary drains), then `dispose()` and return, without
 * waiting for the loser or destroying the agent. It must exit by itself.
 */
import https from "node:https";
import { CosmosClient } from "@azure/cosmos";
import { withHedging } from "../../src/client/withHedging.js";
import type { HedgeDiagnostics } from "../../src/diagnostics/diagnostics.js";

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
}

const records: HedgeDiagnostics[] = [];
const client = new CosmosClient(
  withHedging(
    {
      endpoint: required("WAN_ENDPOINT"),
      key: required("WAN_KEY"),
      agent: new https.Agent({ keepAlive: true, ca: required("WAN_CA") }),
      connectionPolicy: { preferredLocations: ["East US", "West US"] },
    },
    { crossRegion: { threshold: Number(required("WAN_THRESHOLD")) }, onDiagnostics: (record) => records.push(record) },
  ),
);
await client.database("db").container("items").item("1", "a").read();
client.dispose();
const record = records.find((entry) => entry.operation === "pointRead");
const drained = record?.arms.filter((arm) => arm.outcome === "drained").map((arm) => arm.region) ?? [];
console.log(`${record?.winningRegion} drained ${drained.join(", ")}`);
