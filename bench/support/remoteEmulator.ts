import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

/** An emulator running in a child process: where to reach it, and how to stop it. */
export interface RemoteEmulator {
  readonly endpoint: string;
  readonly key: string;
  close(): Promise<void>;
}

/** Starts `bench/support/emulatorProcess.ts` in a child Node.js process and waits for its address. */
export async function startRemoteEmulator(): Promise<RemoteEmulator> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "bench/support/emulatorProcess.ts"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the emulator process exited with ${code} before it started`)));
  });
  lines.close();
  const { endpoint, key } = JSON.parse(first) as { endpoint: string; key: string };
  return {
    endpoint,
    key,
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.stdin!.end();
      }),
  };
}
