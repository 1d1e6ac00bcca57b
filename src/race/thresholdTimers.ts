/** A read waiting for its threshold in a {@link ThresholdTimers} (see `PendingRead`). */
export interface WaitingRead {
  /** When it started (`performance.now()`): its threshold passes `thresholdMs` later. */
  readonly startedAt: number;
  readonly thresholdMs: number;
  /** Called once, when its threshold has passed, unless it was {@link ThresholdTimers.remove}d before. */
  thresholdPassed(): void;
  /** The list's links, kept on the read itself so that waiting allocates nothing: set by {@link ThresholdTimers} only. */
  waitingIn: WaitingList | undefined;
  waitingBefore: WaitingRead | undefined;
  waitingAfter: WaitingRead | undefined;
}

/** The reads of one threshold, in the order their thresholds pass, under one timer set for the first of them. */
interface WaitingList {
  readonly thresholdMs: number;
  first: WaitingRead | undefined;
  last: WaitingRead | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The threshold timers of a policy's pending reads: one timer a threshold
 * in use rather than one a read. Reads of one threshold pass it in the
 * order they started, so they wait in a list in that order, linked through
 * the reads themselves, and one timer is set for the first: starting to
 * wait and ending early are a few field stores, where a timer of Node's own
 * is an object, an async id and a call into libuv for its clock. The timer
 * is cleared as the last read leaves, so that nothing of a read outlives
 * it or keeps the process alive.
 */
export class ThresholdTimers {
  private readonly lists: WaitingList[] = [];

  /** Starts `read`'s wait; its `thresholdPassed` is called when `startedAt + thresholdMs` has passed. */
  add(read: WaitingRead): void {
    const list = this.listOf(read.thresholdMs);
    read.waitingIn = list;
    read.waitingBefore = list.last;
    read.waitingAfter = undefined;
    if (list.last === undefined) list.first = read;
    else list.last.waitingAfter = read;
    list.last = read;
    if (list.timer === undefined) this.arm(list, read.startedAt + read.thresholdMs);
  }

  /** Ends `read`'s wait, if it still waits. */
  remove(read: WaitingRead): void {
    const list = read.waitingIn;
    if (list === undefined) return;
    unlink(list, read);
    if (list.first === undefined && list.timer !== undefined) {
      clearTimeout(list.timer);
      list.timer = undefined;
    }
  }

  private listOf(thresholdMs: number): WaitingList {
    for (const list of this.lists) if (list.thresholdMs === thresholdMs) return list;
    const list: WaitingList = { thresholdMs, first: undefined, last: undefined, timer: undefined };
    this.lists.push(list);
    return list;
  }

  private arm(list: WaitingList, dueAt: number): void {
    list.timer = setTimeout(fire, Math.max(0, Math.ceil(dueAt - performance.now())), this, list);
  }

  /** The list's timer went off: every read whose threshold has passed is told so, and the timer is set for the next. */
  fired(list: WaitingList): void {
    list.timer = undefined;
    const now = performance.now();
    try {
      let read = list.first;
      while (read !== undefined && read.startedAt + read.thresholdMs <= now) {
        unlink(list, read);
        read.thresholdPassed();
        // A read told may end others (its race settling at once, say): start again from whoever waits first now.
        read = list.first;
      }
    } finally {
      // Even past a read that threw, as a timer of each read's own would have gone off all the same.
      const first = list.first;
      if (first !== undefined && list.timer === undefined) this.arm(list, first.startedAt + first.thresholdMs);
    }
  }
}

/** A list's timer callback: a module function with its arguments, so that arming makes no closure. */
function fire(timers: ThresholdTimers, list: WaitingList): void {
  timers.fired(list);
}

function unlink(list: WaitingList, read: WaitingRead): void {
  const { waitingBefore: before, waitingAfter: after } = read;
  if (before === undefined) list.first = after;
  else before.waitingAfter = after;
  if (after === undefined) list.last = before;
  else after.waitingBefore = before;
  read.waitingIn = read.waitingBefore = read.waitingAfter = undefined;
}
