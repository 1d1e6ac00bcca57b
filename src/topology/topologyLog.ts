/**
 * What the log lines read of a topology: the shape of `AccountTopology`,
 * declared here so that the region cache, which logs, and this file, which
 * words its lines, do not import each other.
 */
interface LoggedTopology {
  readonly readRegions: readonly { readonly name: string; readonly endpoint: string }[];
  readonly writeRegions: readonly { readonly name: string; readonly endpoint: string }[];
  readonly multipleWriteLocations: boolean;
  readonly perPartitionFailover: boolean;
  readonly crossRegionalHedgingDisabled: boolean;
}

function regionList(regions: LoggedTopology["readRegions"]): string {
  return regions.map((region) => region.name).join(", ") || "none";
}

function sameRegions(a: LoggedTopology["readRegions"], b: LoggedTopology["readRegions"]): boolean {
  return a.length === b.length && a.every((region, i) => region.name === b[i]?.name && region.endpoint === b[i]?.endpoint);
}

/**
 * The lines that a new topology is worth, each with its rate-limiting key:
 * the regions when first learned or changed, and the account's
 * per-partition failover and hedging switch when they turn (each of which
 * turns hedging on or off).
 */
export function topologyChangeLines(previous: LoggedTopology | undefined, next: LoggedTopology): { key: string; line: string }[] {
  const lines: { key: string; line: string }[] = [];
  const shape = `read regions ${regionList(next.readRegions)}; write regions ${regionList(next.writeRegions)}; multi-write ${next.multipleWriteLocations ? "on" : "off"}`;
  if (previous === undefined) {
    lines.push({ key: "topology", line: `Learned the account's topology: ${shape}; per-partition automatic failover ${next.perPartitionFailover ? "on" : "off"}.` });
  } else if (
    !sameRegions(previous.readRegions, next.readRegions) ||
    !sameRegions(previous.writeRegions, next.writeRegions) ||
    previous.multipleWriteLocations !== next.multipleWriteLocations
  ) {
    lines.push({ key: "topology", line: `The account's topology changed: ${shape}.` });
  }
  if (previous !== undefined && previous.perPartitionFailover !== next.perPartitionFailover) {
    lines.push({
      key: "perPartitionFailover",
      line: next.perPartitionFailover
        ? `The account now reports per-partition automatic failover: hedging set to "followAccount" is on.`
        : `The account no longer reports per-partition automatic failover: hedging set to "followAccount" is off.`,
    });
  }
  if (next.crossRegionalHedgingDisabled !== (previous?.crossRegionalHedgingDisabled ?? false)) {
    lines.push({
      key: "crossRegionalHedgingDisabled",
      line: next.crossRegionalHedgingDisabled
        ? "The account's disableCrossRegionalHedging switch is set: all hedging is off until the operator clears it."
        : "The account's disableCrossRegionalHedging switch was cleared: hedging is back as configured.",
    });
  }
  return lines;
}
