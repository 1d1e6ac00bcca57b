import type { Socket } from "node:net";

interface Pending {
  /** `performance.now()` at which the chunk (or the end of the stream) is delivered. */
  readonly at: number;
  /** A chunk, or `undefined` for the end of the stream. */
  readonly chunk: Buffer | undefined;
}

/** Bytes queued in one direction before the sending socket is paused. */
const highWaterBytes = 1 << 20;

/**
 * One direction of an emulated network path: every chunk read from `source`
 * is written to `sink` no earlier than `deliverAt()` says, in order. The end
 * of the stream travels the same way, so a half-close arrives after the data
 * before it.
 */
export class DelayLine {
  private readonly queue: Pending[] = [];
  private queuedBytes = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private waitingForDrain = false;
  private lastAt = 0;

  constructor(
    private readonly source: Socket,
    private readonly sink: Socket,
    /** When a chunk read now reaches the other side. */
    private readonly deliverAt: () => number,
  ) {
    source.on("data", (chunk: Buffer) => this.enqueue(chunk));
    source.on("end", () => this.enqueue(undefined));
    sink.on("drain", () => {
      this.waitingForDrain = false;
      this.pump();
    });
  }

  /** Cancels what is still in flight: the path is gone. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private enqueue(chunk: Buffer | undefined): void {
    // Chunks of one direction never overtake each other, whatever the clock says.
    const at = Math.max(this.deliverAt(), this.lastAt);
    this.lastAt = at;
    this.queue.push({ at, chunk });
    if (chunk !== undefined) {
      this.queuedBytes += chunk.length;
      if (this.queuedBytes > highWaterBytes) this.source.pause();
    }
    this.pump();
  }

  private pump(): void {
    if (this.timer !== undefined || this.waitingForDrain) return;
    const now = performance.now();
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (head.at > now) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, head.at - now);
        return;
      }
      this.queue.shift();
      if (this.sink.destroyed) continue;
      if (head.chunk === undefined) {
        this.sink.end();
        continue;
      }
      this.queuedBytes -= head.chunk.length;
      if (this.queuedBytes <= highWaterBytes && this.source.isPaused()) this.source.resume();
      if (!this.sink.write(head.chunk)) {
        this.waitingForDrain = true;
        return;
      }
    }
  }
}
