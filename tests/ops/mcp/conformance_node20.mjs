// `node --import ./conformance_node20.mjs …/conformance/dist/index.js`: the conformance suite's
// bundle imports `globSync` from `fs` (Node 22); on Node 20 its `fs` is the real one plus a stub
// `globSync` that throws (no server scenario calls it). On Node 22 nothing changes.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") {
  register("./conformance_node20_hooks.mjs", import.meta.url);
}
