// SPDX-License-Identifier: MIT
// Read Zarr arrays with zarrita.js and print what they hold, for the mount
// tests (tests/mount/lib/zarrita.py runs it).
//
// usage: node zread.mjs fs|fetch v2|v3 LOCATION...
//   fs: each LOCATION is a folder; fetch: each is a URL (zarray.mjs).
// Prints one JSON line per LOCATION, in order: zarray.mjs's arrayLine, or
// {"error": "..."}.
import * as zarr from "zarrita";
import { arrayLine, printLine, storeOf } from "./zarray.mjs";

async function readOne(kind, version, location) {
  const node = zarr.root(storeOf(kind, location));
  const arr = version === "v3" ? await zarr.open.v3(node, { kind: "array" })
                               : await zarr.open.v2(node, { kind: "array" });
  return arrayLine(arr);
}

const [kind, version, ...locations] = process.argv.slice(2);
for (const location of locations)
  await printLine(() => readOne(kind, version, location));
