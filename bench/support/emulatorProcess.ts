// Emulators (and their WAN fronts) in a process of their own, so that a benchmark of the client
// measures the client alone: its CPU, and its event loop's stalls without
// the emulator's. Commands arrive as JSON lines on standard input
// (`{ id, method, params }`) and each answer leaves as one line on standard
// output (`{ id, result }` or `{ id, error }`); when standard input ends (the
// parent exited or closed it), every emulator closes and the process exits.
import { createInterface } from "node:readline";
import { startEmulator, startWan } from "../../test/emulator/index.js";
import type { Emulator, EmulatorOptions, FaultHandle, FaultRule, Wan, WanOptions } from "../../test/emulator/index.js";
import type { OperationKind } from "../../src/cosmos/operationKind.js";
import type { EmulatorCommand } from "./remoteEmulator.js";

const emulators = new Map<number, Emulator>();
const wans = new Map<number, Wan>();
const faults = new Map<number, FaultHandle>();
/** The rules installed on each emulator, for `faultsApplied`. */
const faultsOf = new Map<number, FaultHandle[]>();
let nextId = 1;

function wanOf(id: number): Wan {
  const wan = wans.get(id);
  if (wan === undefined) throw new Error(`no WAN ${id}`);
  return wan;
}

function emulatorOf(id: number): Emulator {
  const emulator = emulators.get(id);
  if (emulator === undefined) throw new Error(`no emulator ${id}`);
  return emulator;
}

async function perform(method: EmulatorCommand["method"], params: Record<string, unknown>): Promise<unknown> {
  switch (method) {
    case "start": {
      const emulator = await startEmulator({ ...(params.options as EmulatorOptions), recordRequests: false });
      const id = nextId++;
      emulators.set(id, emulator);
      return { id, endpoint: emulator.endpoint, key: emulator.key, regions: emulator.regions.map(({ name, endpoint }) => ({ name, endpoint })) };
    }
    case "addFault": {
      const handle = emulatorOf(params.emulator as number).region(params.region as string).addFault(params.rule as FaultRule);
      const id = nextId++;
      faults.set(id, handle);
      faultsOf.set(params.emulator as number, [...(faultsOf.get(params.emulator as number) ?? []), handle]);
      return id;
    }
    case "removeFault":
      faults.get(params.fault as number)?.remove();
      faults.delete(params.fault as number);
      return null;
    case "count":
      return emulatorOf(params.emulator as number).count(params.kind as OperationKind | OperationKind[] | undefined);
    case "faultsApplied":
      return (faultsOf.get(params.emulator as number) ?? []).reduce((sum, handle) => sum + handle.applied, 0);
    case "resetCounters":
      emulatorOf(params.emulator as number).resetCounters();
      return null;
    case "startWan": {
      const wan = await startWan(emulatorOf(params.emulator as number), params.options as WanOptions);
      const id = nextId++;
      wans.set(id, wan);
      return { id, endpoint: wan.endpoint, ca: wan.ca };
    }
    case "wanFigures": {
      const wan = wanOf(params.wan as number);
      return { counters: wan.counters, regions: wan.regions.map(({ name, counters, openConnections }) => ({ name, counters, openConnections })) };
    }
    case "wanResetCounters":
      wanOf(params.wan as number).resetCounters();
      return null;
    case "closeWan":
      await wans.get(params.wan as number)?.close();
      wans.delete(params.wan as number);
      return null;
    case "close":
      await emulators.get(params.emulator as number)?.close();
      emulators.delete(params.emulator as number);
      faultsOf.delete(params.emulator as number);
      return null;
  }
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, method, params } = JSON.parse(line) as EmulatorCommand & { id: number };
  perform(method, params).then(
    (result) => process.stdout.write(`${JSON.stringify({ id, result })}\n`),
    (error: unknown) => process.stdout.write(`${JSON.stringify({ id, error: error instanceof Error ? error.message : String(error) })}\n`),
  );
});
lines.on("close", () => {
  void Promise.all([...wans.values()].map((wan) => wan.close()))
    .then(() => Promise.all([...emulators.values()].map((emulator) => emulator.close())))
    .then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
