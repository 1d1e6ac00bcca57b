import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "coverage/", "temp/", "node_modules/", "bench/results/", "demo-output/", ".scratch/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", Buffer: "readonly", setTimeout: "readonly", clearTimeout: "readonly", setInterval: "readonly", clearInterval: "readonly", setImmediate: "readonly", URL: "readonly", AbortController: "readonly", AbortSignal: "readonly", TextEncoder: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "off",
      eqeqeq: ["error", "smart"]
    }
  },
  {
    files: ["src/**/*.ts"],
    rules: { "no-console": "error", "@typescript-eslint/no-explicit-any": "error" }
  },
  {
    files: ["test/**/*.ts", "bench/**/*.ts", "demo/**/*.ts", "samples/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off", "@typescript-eslint/no-unused-expressions": "off" }
  }
);
