// The multi-region emulator in a process of its own, so that a benchmark of
// the client measures the client's CPU alone. It prints one JSON line with
// the endpoint and key, and closes when its standard input ends (the parent
// exited or closed it).
import { startEmulator } from "../../test/emulator/index.js";

const emulator = await startEmulator({ recordRequests: false });
process.stdout.write(`${JSON.stringify({ endpoint: emulator.endpoint, key: emulator.key })}\n`);
process.stdin.resume();
process.stdin.on("end", () => {
  void emulator.close().then(() => process.exit(0));
});
