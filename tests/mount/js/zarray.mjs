// SPDX-License-Identifier: MIT
// What zread.mjs and zgroup.mjs share: the store of a location and one
// array read whole into the JSON line the mount tests decode
// (tests/mount/lib/zarrita.py).
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";
import FetchStore from "@zarrita/storage/fetch";

const typedArrays = {
  bool: Uint8Array, int8: Int8Array, int16: Int16Array, int32: Int32Array,
  int64: BigInt64Array, uint8: Uint8Array, uint16: Uint16Array,
  uint32: Uint32Array, uint64: BigUint64Array, float32: Float32Array,
  float64: Float64Array,
};

// fs: LOCATION is a folder (@zarrita/storage's FileSystemStore); fetch: a
// URL (FetchStore: HTTP GETs, as in a browser).
export function storeOf(kind, location) {
  return kind === "fetch" ? new FetchStore(location) : new FileSystemStore(location);
}

// {"shape": [...], "data_type": "...", "base64": the elements in C order,
// each in this machine's byte order (bool as one byte 0/1)} of zarrita's
// Array ARR.
export async function arrayLine(arr) {
  const typed = typedArrays[arr.dtype];
  if (!typed) throw new Error(`no typed array here for ${arr.dtype}`);
  let got = await zarr.get(arr);
  if (got.shape === undefined) // a 0-d array gives its one element
    got = { data: [got], shape: [], stride: [] };
  const count = got.shape.reduce((a, b) => a * b, 1);
  const bool = arr.dtype === "bool";
  const out = new typed(count);
  const index = new Array(got.shape.length).fill(0);
  for (let i = 0; i < count; i++) {
    let at = 0;
    for (let d = 0; d < index.length; d++) at += index[d] * got.stride[d];
    const v = got.data.get ? got.data.get(at) : got.data[at];
    out[i] = bool ? (v ? 1 : 0) : v;
    for (let d = index.length - 1; d >= 0; d--) {
      if (++index[d] < got.shape[d]) break;
      index[d] = 0;
    }
  }
  const bytes = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  return { shape: got.shape, data_type: arr.dtype, base64: bytes.toString("base64") };
}

// Print one JSON line: what MAKE() resolves to, or {"error": ...}.
export async function printLine(make) {
  let line;
  try {
    line = await make();
  } catch (e) {
    line = { error: String(e && e.stack ? e.stack : e) };
  }
  console.log(JSON.stringify(line));
}
