import https from "node:https";
import type { CosmosClient } from "@azure/cosmos";
import { startEmulator, startWan } from "../../test/emulator/index.js";
import type { Emulator, Wan } from "../../test/emulator/index.js";

/** What a WAN case runs on: the emulator, its WAN fronts and an agent that trusts their certificate. */
export interface WanRig {
  readonly emulator: Emulator;
  readonly wan: Wan;
  readonly agent: https.Agent;
  /** Disposes the case's client (when it made one), then the agent's sockets, the fronts and the emulator. */
  close(client: CosmosClient | undefined): Promise<void>;
}

/** Starts the emulator and its WAN fronts with the given round-trip times, and a keep-alive agent trusting them. */
export async function startWanRig(
  settings: { readonly seed: number; readonly rttMs: Readonly<Record<string, number>> },
  front: { readonly keepAliveTimeoutMs?: number | undefined; readonly scheduling?: "fifo" | "lifo" | undefined } = {},
): Promise<WanRig> {
  const emulator = await startEmulator({ seed: settings.seed, recordRequests: false });
  const wan = await startWan(emulator, { rttMs: { ...settings.rttMs }, ...(front.keepAliveTimeoutMs !== undefined ? { keepAliveTimeoutMs: front.keepAliveTimeoutMs } : {}) });
  const agent = new https.Agent({ keepAlive: true, ca: wan.ca, ...(front.scheduling !== undefined ? { scheduling: front.scheduling } : {}) });
  return {
    emulator,
    wan,
    agent,
    close: async (client) => {
      client?.dispose();
      agent.destroy();
      await wan.close();
      await emulator.close();
    },
  };
}
