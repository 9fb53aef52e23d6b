// SPDX-License-Identifier: MIT
// Open a Zarr group with zarrita.js, walk to its children by key and read
// them, for the mount tests (tests/mount/lib/zarrita.py runs it).
//
// usage: node zgroup.mjs fs|fetch v2|v3|v2-consolidated GROUP KEY...
//   fs: GROUP is a folder; fetch: a URL (zarray.mjs). v2-consolidated:
//   the store is zarrita's withConsolidatedMetadata of GROUP's .zmetadata,
//   so every metadata document comes from that one read.
//   KEY: a '/'-separated path in the group; each component but the last
//   is opened as a group from its parent, the last as an array, or as a
//   group when KEY ends with '/'.
// Prints the group's line ({"node_type": "group", "contents": ["array
// /a", "group /g", ...] (v2-consolidated only: what the document lists)}),
// then one line per KEY: {"node_type": "group"} or zarray.mjs's arrayLine,
// or {"error": "..."} for either.
import * as zarr from "zarrita";
import { arrayLine, printLine, storeOf } from "./zarray.mjs";

function opener(version) {
  return version === "v3" ? zarr.open.v3 : zarr.open.v2;
}

async function openChild(version, group, key) {
  const open = opener(version);
  const parts = key.split("/");
  const wantGroup = parts[parts.length - 1] === "";
  if (wantGroup) parts.pop();
  let node = group;
  for (let i = 0; i < parts.length - 1; i++)
    node = await open(node.resolve(parts[i]), { kind: "group" });
  const last = node.resolve(parts[parts.length - 1]);
  if (wantGroup) {
    await open(last, { kind: "group" });
    return { node_type: "group" };
  }
  return arrayLine(await open(last, { kind: "array" }));
}

const [kind, version, location, ...keys] = process.argv.slice(2);
let store = storeOf(kind, location);
const consolidated = version === "v2-consolidated";
const meta = consolidated ? "v2" : version;
let group;
await printLine(async () => {
  if (consolidated)
    store = await zarr.withConsolidatedMetadata(store, { format: "v2" });
  group = await opener(meta)(zarr.root(store), { kind: "group" });
  const line = { node_type: "group" };
  if (consolidated)
    line.contents = store.contents().map((c) => `${c.kind} ${c.path}`).sort();
  return line;
});
for (const key of keys)
  await printLine(async () => {
    if (!group) throw new Error("the group did not open");
    return openChild(meta, group, key);
  });
