// Module hooks for `conformance_node20.mjs`: `fs`, imported by the conformance suite, is
// `node:fs` and a `globSync` stub.
const SHIM = "lineup-node20:fs";
const SOURCE = `
import fs from "node:fs";
export * from "node:fs";
export default fs;
export function globSync() { throw new Error("fs.globSync needs Node 22"); }
`;

export async function resolve(specifier, context, next) {
  const fromSuite = context.parentURL?.includes("/@modelcontextprotocol/conformance/");
  if (fromSuite && (specifier === "fs" || specifier === "node:fs")) {
    return { url: SHIM, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url === SHIM) return { format: "module", source: SOURCE, shortCircuit: true };
  return next(url, context);
}
