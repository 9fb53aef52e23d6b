# SPDX-License-Identifier: MIT
# The arrayrefs section of scripts/bench (sourced by it, which defines
# $work, $runs, $py, $small_n, start_fs, stop_fs, secs, minf and row).
# BENCH_ONLY=refs runs it alone. Best of BENCH_RUNS, every side in the
# same round, its sources read right before each timed run:
#   (1) `arrayrefs -o FILE` of the $small_n small .npy against
#       tests/bench/bench_heads (C, one thread: the folder listed, every
#       file's first 256 bytes read with one pread each); arrayrefs reads
#       the files on a second thread while it formats (both cores);
#   (2) bytes of the reference file per chunk, metadata included: of that
#       folder, and of a BENCH_REFS_MIB (512) MiB int32 .npy with
#       --chunk 65536 (many chunks);
#   (3) dask.array.from_zarr(...).sum() of the BENCH_REFS_MIB array over
#       HTTP, from_zarr's opening timed too (scripts/lib/bench_refs.py:
#       nginx from examples/nginx.conf, dask's threaded scheduler with 2
#       threads on every side): references
#       to nginx serving the folder, against nginx serving a fresh arrayfs
#       mount's B.zarr/ (-o allow_other) and nginx serving a converted copy
#       (zarr.save_array with the same 8 MiB chunks and zarr's default
#       compressor, on the sources' file system).

# refs_per_chunk REFS: "B_PER_CHUNK (SIZE B / CHUNKS chunks; chunk
# entries alone: B each)" of reference file REFS, where a chunk is a key
# whose last part is no .z* name and "chunk entries alone" re-encodes
# those keys and values as the tool writes them ("KEY": VALUE,)
refs_per_chunk() {
	"$py" - "$1" <<'PYEOF'
import json, os, sys
refs = json.load(open(sys.argv[1]))["refs"]
chunks = [k for k in refs if not k.rsplit("/", 1)[-1].startswith(".")]
alone = sum(len(json.dumps(k)) + 3 + len(json.dumps(refs[k])) for k in chunks)
size = os.path.getsize(sys.argv[1])
print("%.1f (%d B / %d chunks; chunk entries alone: %.1f B each)"
      % (size / len(chunks), size, len(chunks), alone / len(chunks)))
PYEOF
}

# read_tree DIR: every file under DIR read once (into the page cache)
read_tree() { find "$1" -type f -print0 | xargs -0 -n 2000 cat >/dev/null; }

refs_section() {
	echo "arrayrefs ..." >&2
	local arrayrefs=$root/$builddir/src/tools/arrayrefs
	local heads=$root/$builddir/tests/bench/bench_heads
	local mib=${BENCH_REFS_MIB:-512}
	local rd=$work/src/refs
	mkdir -p "$rd" "$work/refscopy"
	"$py" - "$rd/big.npy" "$mib" "$work/refscopy/big.zarr" <<'PYEOF'
import sys
import numpy as np
import zarr
path, mib, copy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = (mib << 20) // 4
a = np.lib.format.open_memmap(path, mode="w+", dtype="<i4", shape=(n,))
rng = np.random.default_rng(28)
step = 1 << 24
for i in range(0, n, step):
    a[i:i + step] = rng.integers(-2**31, 2**31, size=min(step, n - i),
                                 dtype=np.int64).astype("<i4")
a.flush()
# the converted copy: the refs' grid (8 MiB chunks), zarr's default compressor
zarr.save_array(copy, np.load(path, mmap_mode="r"), chunks=(2 << 20,))
PYEOF
	sync
	local tr=() th=() ds=() dm=() dc=() loads=() t
	for _ in $(seq "$runs"); do
		read_tree "$work/src/small"
		tr+=("$(secs "$arrayrefs" -o "$work/refs_small.json" "$work/src/small")")
		read_tree "$work/src/small"
		t=$("$heads" "$work/src/small")
		[ "$(cut -d' ' -f2,3 <<<"$t")" = "$small_n 0" ] ||
			{ echo "bench_heads: $t" >&2; exit 1; }
		th+=("${t%% *}")
		cat "$rd/big.npy" >/dev/null
		ds+=("$("$py" "$root/scripts/lib/bench_refs.py" refs "$rd" "$rd/big.npy" "$arrayrefs" "$work/refs_big.json")")
		start_fs a -o allow_other
		cat "$rd/big.npy" >/dev/null
		dm+=("$("$py" "$root/scripts/lib/bench_refs.py" zarr "$work/mnt_a" "$rd/big.npy" refs/big.npy/big.zarr)")
		stop_fs a
		read_tree "$work/refscopy"
		dc+=("$("$py" "$root/scripts/lib/bench_refs.py" zarr "$work/refscopy" "$rd/big.npy" big.zarr)")
		loads+=("$(cut -d' ' -f1 /proc/loadavg)")
	done
	"$arrayrefs" --chunk 65536 -o "$work/refs_many.json" "$rd/big.npy"
	local br bh bs bm bc
	br=$(minf "${tr[@]}"); bh=$(minf "${th[@]}")
	bs=$(minf "${ds[@]}"); bm=$(minf "${dm[@]}"); bc=$(minf "${dc[@]}")
	echo
	echo "arrayrefs: best of $runs (load average after each round: ${loads[*]})"
	row "measure" "arrayrefs" "peer"
	row "refs of ${small_n} .npy (2 threads) / 256 B pread each (1 thread) (s)" "$br" "$bh"
	row "  all runs" "${tr[*]}" "${th[*]}"
	row "  ratio (target <= 1.5x)" "$(ratio "$br" "$bh")" ""
	echo "reference file bytes per chunk (target <= 120), metadata included:"
	echo "  ${small_n} .npy: $(refs_per_chunk "$work/refs_small.json")"
	echo "  ${mib} MiB int32, --chunk 65536: $(refs_per_chunk "$work/refs_many.json")"
	echo "dask from_zarr().sum() of ${mib} MiB int32 over HTTP (s; threads scheduler, 2 threads):"
	row "  refs -> nginx over the folder" "$bs" "${ds[*]}"
	row "  nginx over the mount's B.zarr/" "$bm" "${dm[*]}"
	row "  nginx over zarr.save_array copy" "$bc" "${dc[*]}"
	row "  mount's time / refs' (target >= 1.0x)" "$(ratio "$bm" "$bs")" ""
	row "  copy's time / refs' (target >= 0.8x)" "$(ratio "$bc" "$bs")" ""
}
