import https from "node:https";
import type { CosmosClient } from "@azure/cosmos";
import { startEmulatorHost } from "./remoteEmulator.js";
import type { RemoteEmulator, RemoteWan } from "./remoteEmulator.js";

/**
 * What a WAN case runs on: the emulator and its WAN fronts in a process of
 * their own, and an agent that trusts the fronts' certificate. In the
 * client's process, the fronts' delay lines and TLS shared its event loop
 * and its core: the learner's own p99 moved by up to 1.27x between two
 * runs of one seed (issue 24's runs 41 to 45), wider than the gap the case
 * is asked to show.
 */
export interface WanRig {
  readonly emulator: RemoteEmulator;
  readonly wan: RemoteWan;
  readonly agent: https.Agent;
  /** Disposes the case's client (when it made one), then the agent's sockets, the fronts, the emulator and their process. */
  close(client: CosmosClient | undefined): Promise<void>;
}

/** Starts the emulator and its WAN fronts with the given round-trip times in a child process, and a keep-alive agent trusting them. */
export async function startWanRig(
  settings: { readonly seed: number; readonly rttMs: Readonly<Record<string, number>> },
  front: { readonly keepAliveTimeoutMs?: number | undefined; readonly scheduling?: "fifo" | "lifo" | undefined } = {},
): Promise<WanRig> {
  const host = await startEmulatorHost();
  try {
    const emulator = await host.start({ seed: settings.seed });
    const wan = await emulator.startWan({ rttMs: { ...settings.rttMs }, ...(front.keepAliveTimeoutMs !== undefined ? { keepAliveTimeoutMs: front.keepAliveTimeoutMs } : {}) });
    const agent = new https.Agent({ keepAlive: true, ca: wan.ca, ...(front.scheduling !== undefined ? { scheduling: front.scheduling } : {}) });
    return {
      emulator,
      wan,
      agent,
      close: async (client) => {
        client?.dispose();
        agent.destroy();
        await host.close();
      },
    };
  } catch (error) {
    await host.close();
    throw error;
  }
}
