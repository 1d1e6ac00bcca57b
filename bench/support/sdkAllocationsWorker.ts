// One mode of `npm run bench:sdk-allocations` in a process of its own: the
// promises, timers and bytes a point read allocates through the real
// @azure/cosmos client over the in-memory account, warm. Prints JSON.
import { createHook } from "node:async_hooks";
import { Session } from "node:inspector/promises";
import { CosmosClient } from "@azure/cosmos";
import { readRound, sdkOverheadBaseOptions, sdkOverheadModes } from "../suites/sdkOverhead.js";

const reads = 10_000;
const mode = sdkOverheadModes[Number(process.env.SDK_ALLOCATIONS_MODE)];
if (mode === undefined) throw new Error(`no overhead mode ${process.env.SDK_ALLOCATIONS_MODE}`);
const client = new CosmosClient(mode.options(sdkOverheadBaseOptions({ kind: "inMemory" })));
const items = client.database("bench").container("items");
for (let warmUp = 0; warmUp < 3; warmUp++) await readRound(items, 1000, 8);

// Async resources by type: every promise, timer and tick a read creates.
const resources = new Map<string, number>();
const hook = createHook({ init: (_id, type) => void resources.set(type, (resources.get(type) ?? 0) + 1) });
hook.enable();
await readRound(items, reads, 8);
hook.disable();

// Bytes allocated, sampled every 4 KiB, objects the garbage collector has already freed included.
const session = new Session();
session.connect();
await session.post("HeapProfiler.enable");
// The two flags are V8's (Node.js 20 has them); its protocol types lag.
await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
await readRound(items, reads, 8);
const { profile } = await session.post("HeapProfiler.stopSampling");
session.disconnect();
// Each sample is one sampled allocation; its size is the bytes it stands for. Node.js 20's protocol types omit the field.
const { samples } = profile as typeof profile & { samples: readonly { readonly size: number }[] };
const bytes = samples.reduce((sum, sample) => sum + sample.size, 0);

client.dispose();
process.stdout.write(
  JSON.stringify({
    promises: (resources.get("PROMISE") ?? 0) / reads,
    timers: (resources.get("Timeout") ?? 0) / reads,
    bytes: bytes / reads,
  }),
);
process.exit(0);
