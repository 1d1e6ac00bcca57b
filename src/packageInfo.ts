/** The package's name and version, as tracing reports them; a test keeps them equal to package.json. */
export const packageInfo = {
  name: "cosmos-hedging",
  version: "0.2.0",
} as const;
