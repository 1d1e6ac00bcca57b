import { accountKinds, fanOutQuery, faultNames, operationNames, pagedOperations } from "./harness.js";
import type { AccountKind, DifferentialCase, FaultName, OperationName } from "./harness.js";

/**
 * One row of the matrix table: the accounts, circuit-breaker settings,
 * operations and faults it covers, and how it pairs them. `all` is every
 * combination; `rotate` gives each operation one fault, shifted by one for
 * each (account, circuit breaker) variant of the row, so that over a row
 * every operation and every fault appear without the full product.
 */
export interface MatrixRow {
  readonly label: string;
  readonly accounts: readonly AccountKind[];
  readonly circuitBreaker: readonly boolean[];
  readonly operations: readonly OperationName[];
  readonly faults: readonly FaultName[];
  readonly pairing: "all" | "rotate";
  readonly betweenPages?: boolean;
  readonly busy?: boolean;
}

const writeOperations = operationNames.filter((operation) => !pagedOperations.has(operation) && operation !== "pointRead");
const paged = operationNames.filter((operation) => pagedOperations.has(operation));

/** The matrix, as a table: each row a covering set of its own. */
export const matrixTable: readonly MatrixRow[] = [
  { label: "every operation under every fault, single-write", accounts: ["singleWrite"], circuitBreaker: [false], operations: operationNames, faults: faultNames, pairing: "all" },
  {
    label: "every write under every fault, multi-write with write hedging (where writes are hedged)",
    accounts: ["multiWriteHedged"],
    circuitBreaker: [false],
    operations: writeOperations,
    faults: faultNames,
    pairing: "all",
  },
  {
    label: "every operation on every other account and circuit-breaker setting, faults rotated",
    accounts: accountKinds,
    circuitBreaker: [false, true],
    operations: operationNames,
    faults: faultNames,
    pairing: "rotate",
  },
  {
    label: "paged feeds whose region starts failing between pages, single-write",
    accounts: ["singleWrite"],
    circuitBreaker: [false],
    operations: paged,
    faults: faultNames,
    pairing: "all",
    betweenPages: true,
  },
  {
    label: "paged feeds failing between pages on the other accounts, with the circuit breaker, faults rotated",
    accounts: ["multiWrite", "ppaf"],
    circuitBreaker: [false, true],
    operations: paged,
    faults: faultNames,
    pairing: "rotate",
    betweenPages: true,
  },
  {
    label: "the query fanned out range by range over a container of two ranges, under every fault",
    accounts: ["multiPartition"],
    circuitBreaker: [false],
    operations: [fanOutQuery],
    faults: faultNames,
    pairing: "all",
  },
  {
    label: "the fanned-out query failing between pages",
    accounts: ["multiPartition"],
    circuitBreaker: [false, true],
    operations: [fanOutQuery],
    faults: faultNames,
    pairing: "all",
    betweenPages: true,
  },
  { label: "a busy client", accounts: ["singleWrite"], circuitBreaker: [false], operations: ["pointRead"], faults: ["slow", "503", "429", "hung"], pairing: "all", busy: true },
];

const key = (testCase: DifferentialCase): string =>
  [testCase.account, testCase.operation, testCase.fault, testCase.circuitBreaker, testCase.betweenPages, testCase.busy].join("|");

/** The cases of the table, each once, grouped by account. */
export function matrixCases(table: readonly MatrixRow[] = matrixTable): DifferentialCase[] {
  const cases = new Map<string, DifferentialCase>();
  for (const row of table) {
    let variant = 0;
    for (const account of row.accounts) {
      for (const circuitBreaker of row.circuitBreaker) {
        row.operations.forEach((operation, index) => {
          const faults = row.pairing === "all" ? row.faults : [row.faults[(index + variant) % row.faults.length]!];
          for (const fault of faults) {
            const testCase: DifferentialCase = { account, operation, fault, circuitBreaker, betweenPages: row.betweenPages ?? false, busy: row.busy ?? false };
            if (!cases.has(key(testCase))) cases.set(key(testCase), testCase);
          }
        });
        variant++;
      }
    }
  }
  return [...cases.values()].sort((a, b) => accountKinds.indexOf(a.account) - accountKinds.indexOf(b.account));
}
