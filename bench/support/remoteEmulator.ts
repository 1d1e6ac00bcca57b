import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import type { EmulatorOptions, FaultRule, WanCounters, WanOptions } from "../../test/emulator/index.js";

/** A command to `bench/support/emulatorProcess.ts`, one JSON line. */
export type EmulatorCommand =
  | { method: "start"; params: { options: Omit<EmulatorOptions, "recordRequests"> } }
  | { method: "addFault"; params: { emulator: number; region: string; rule: FaultRule } }
  | { method: "removeFault"; params: { fault: number } }
  | { method: "count"; params: { emulator: number; kind?: OperationKind | OperationKind[] } }
  | { method: "faultsApplied"; params: { emulator: number } }
  | { method: "resetCounters"; params: { emulator: number } }
  | { method: "close"; params: { emulator: number } }
  | { method: "startWan"; params: { emulator: number; options: WanOptions } }
  | { method: "wanFigures"; params: { wan: number } }
  | { method: "wanResetCounters"; params: { wan: number } }
  | { method: "closeWan"; params: { wan: number } };

/** What a WAN counted, every region together and each region's own with the connections it holds open. */
export interface WanFigures {
  readonly counters: WanCounters;
  readonly regions: readonly { readonly name: string; readonly counters: WanCounters; readonly openConnections: number }[];
}

/** WAN fronts (see `startWan`) running in the host's child process before one of its emulators. */
export interface RemoteWan {
  /** The endpoint a `CosmosClient` is given: the first region's front. */
  readonly endpoint: string;
  /** The fronts' PEM certificate, for an `https.Agent`'s `ca`. */
  readonly ca: string;
  figures(): Promise<WanFigures>;
  resetCounters(): Promise<void>;
  close(): Promise<void>;
}

/** An emulator running in the host's child process: where to reach it, and how to fault, count and stop it. */
export interface RemoteEmulator {
  readonly endpoint: string;
  readonly key: string;
  readonly regions: readonly { readonly name: string; readonly endpoint: string }[];
  /** Installs a rule in one region, after its existing ones; resolves to its removal. */
  addFault(region: string, rule: FaultRule): Promise<() => Promise<void>>;
  count(kind?: OperationKind | OperationKind[]): Promise<number>;
  /** How many requests every rule ever installed on it has been applied to (removed rules included). */
  faultsApplied(): Promise<number>;
  resetCounters(): Promise<void>;
  /** Starts WAN fronts before this emulator, in the same child process, so that their delay lines keep time apart from the client's event loop. */
  startWan(options: WanOptions): Promise<RemoteWan>;
  close(): Promise<void>;
}

/** A child Node.js process that runs emulators for the benchmark in this one. */
export interface EmulatorHost {
  start(options?: Omit<EmulatorOptions, "recordRequests">): Promise<RemoteEmulator>;
  /** Closes every emulator and ends the child. */
  close(): Promise<void>;
}

/** Starts `bench/support/emulatorProcess.ts` in a child Node.js process and waits until it listens for commands. */
export async function startEmulatorHost(): Promise<EmulatorHost> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "bench/support/emulatorProcess.ts"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let ready!: () => void;
  const started = new Promise<void>((resolve, reject) => {
    ready = resolve;
    child.once("exit", (code) => {
      const error = new Error(`the emulator process exited with ${code}`);
      reject(error);
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
    });
  });
  lines.on("line", (line) => {
    const message = JSON.parse(line) as { ready?: true; id?: number; result?: unknown; error?: string };
    if (message.ready === true) return ready();
    const waiter = pending.get(message.id!);
    pending.delete(message.id!);
    if (message.error !== undefined) waiter?.reject(new Error(`emulator process: ${message.error}`));
    else waiter?.resolve(message.result);
  });
  await started;
  let nextId = 1;
  const call = <T>(command: EmulatorCommand): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.stdin!.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  return {
    async start(options = {}) {
      const started = await call<{ id: number; endpoint: string; key: string; regions: { name: string; endpoint: string }[] }>({
        method: "start",
        params: { options },
      });
      const emulator = started.id;
      return {
        endpoint: started.endpoint,
        key: started.key,
        regions: started.regions,
        async addFault(region, rule) {
          const fault = await call<number>({ method: "addFault", params: { emulator, region, rule } });
          return () => call<void>({ method: "removeFault", params: { fault } });
        },
        count: (kind) => call<number>({ method: "count", params: { emulator, ...(kind === undefined ? {} : { kind }) } }),
        faultsApplied: () => call<number>({ method: "faultsApplied", params: { emulator } }),
        resetCounters: () => call<void>({ method: "resetCounters", params: { emulator } }),
        async startWan(options) {
          const started = await call<{ id: number; endpoint: string; ca: string }>({ method: "startWan", params: { emulator, options } });
          const wan = started.id;
          return {
            endpoint: started.endpoint,
            ca: started.ca,
            figures: () => call<WanFigures>({ method: "wanFigures", params: { wan } }),
            resetCounters: () => call<void>({ method: "wanResetCounters", params: { wan } }),
            close: () => call<void>({ method: "closeWan", params: { wan } }),
          };
        },
        close: () => call<void>({ method: "close", params: { emulator } }),
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.stdin!.end();
      }),
  };
}

/** One emulator with the default regions in a host of its own: closing it ends the host. */
export async function startRemoteEmulator(): Promise<Pick<RemoteEmulator, "endpoint" | "key" | "close">> {
  const host = await startEmulatorHost();
  const emulator = await host.start();
  return { endpoint: emulator.endpoint, key: emulator.key, close: () => host.close() };
}
