import * as hdr from "hdr-histogram-js";

/** Percentiles of a latency sample, in milliseconds. */
export interface LatencySummary {
  count: number;
  p50: number;
  p75: number;
  p95: number;
  p99: number;
  p999: number;
  max: number;
}

/**
 * Records latencies in an HDR histogram (3 significant digits, microsecond
 * resolution up to an hour): percentiles of a long tail stay exact to 0.1 %
 * without keeping every sample, which is what HdrHistogram is built for.
 */
export class LatencyRecorder {
  /** Every sample as recorded, for resampling (see `ratioInterval`): a bench run records thousands, not millions. */
  private readonly recorded: number[] = [];
  private readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });

  record(ms: number): void {
    this.recorded.push(ms);
    this.histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  /** The latency at a percentile (0 to 100), in milliseconds. */
  valueAt(percentile: number): number {
    // The histogram reports the top of a value's bucket; no percentile can exceed the largest sample.
    return Math.min(this.histogram.getValueAtPercentile(percentile), this.histogram.maxValue) / 1000;
  }

  /** Every latency recorded, in milliseconds, in the order recorded. */
  samples(): readonly number[] {
    return this.recorded;
  }

  summary(): LatencySummary {
    const at = (percentile: number): number => this.valueAt(percentile);
    return {
      count: this.histogram.totalCount,
      p50: at(50),
      p75: at(75),
      p95: at(95),
      p99: at(99),
      p999: at(99.9),
      max: this.histogram.maxValue / 1000,
    };
  }
}

/** Formats milliseconds for a table: one decimal below 100 ms, whole numbers above. */
export function ms(value: number): string {
  return value < 100 ? value.toFixed(1) : value.toFixed(0);
}

/** Formats a share as a percentage with one decimal. */
export function percent(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}
