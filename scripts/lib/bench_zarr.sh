# SPDX-License-Identifier: MIT
# The B.zarr/ section of scripts/bench (sourced by it, which defines $work,
# $runs, $py, start_fs, stop_fs, secs, max, minf and row). BENCH_ONLY=zarr
# runs it alone.
#
# B.zarr/: a BENCH_ZARR_MIB (512) MiB int32 .npy, 8 MiB chunks (the
# default). Fresh mount for each timed run, its source read right before,
# best of BENCH_RUNS: (1) every chunk file read once against `data` read
# once, with 1 MiB reads, in one thread (the chunk files one after the
# other) and in two (taking turns over them, as zarr's readers do); (2)
# dask's sum through the mount, dask.array.from_zarr, first and second
# run, against dask.array.from_zarr over a plain-folder copy of the same
# store (cp -r out of the mount into $work/src/zcopy, on the sources' file
# system: zarr's own ceiling on this machine), the same copy through
# libfuse's passthrough_ll (-o cache=always; first and second run: what
# any FUSE file system's page cache allows) and dask.array.from_array of
# numpy.load(mmap_mode='r') with the same chunks (dask's threads, this
# machine's cores), each side's files read right before it, all in the
# same round; (3) `ls` of the B.zarr/ of a (BENCH_ZARR_CHUNKS, 128)
# float64 array mounted with -o zarr_chunk=1024 (one row a chunk), and
# the daemon's RSS before and after.

# read_mibs K FILE...: MiB/s of reading the FILEs once each, 1 MiB at a
# time, by K threads taking turns over them
read_mibs() {
	"$py" - "$@" <<'PYEOF'
import sys, threading, time
k, files = int(sys.argv[1]), sys.argv[2:]
n = [0] * k
def reader(i):
    for path in files[i::k]:
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n[i] += len(b)
threads = [threading.Thread(target=reader, args=(i,)) for i in range(k)]
t0 = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
print("%.0f" % (sum(n) / (1 << 20) / (time.monotonic() - t0)))
PYEOF
}

# dask_secs zarr|folder|pll|numpy: seconds of dask's sum over the store
# through the mount, over its plain-folder copy (directly or through
# passthrough_ll), or over numpy.load(mmap_mode='r') with the store's
# chunks; the sum is checked against numpy's
dask_secs() {
	local store=$work/mnt_a/zarr/big.npy/big.zarr
	# numpy's side takes its chunks from the copy (the mount is down then)
	[ "$1" = folder ] || [ "$1" = numpy ] && store=$work/src/zcopy/big.zarr
	[ "$1" = pll ] && store=$work/mnt_p/zcopy/big.zarr
	"$py" - "$1" "$store" "$zd/big.npy" <<'PYEOF'
import sys, time
import dask.array as da
import numpy as np
how, store, src = sys.argv[1:]
z = da.from_zarr(store)
x = z if how != "numpy" else da.from_array(np.load(src, mmap_mode="r"), chunks=z.chunks)
da.ones(1000, chunks=10).sum().compute()  # dask's thread pool, started untimed
t0 = time.monotonic()
total = x.sum().compute()
t = time.monotonic() - t0
assert int(total) == int(np.load(src, mmap_mode="r").sum(dtype=np.int64))
print("%.3f" % t)
PYEOF
}

# kib_mib KIB: KiB as MiB, one decimal
kib_mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

# ratio A B: A / B to two places
ratio() { "$py" -c "import sys; print('%.2fx' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }

# dask_row LABEL SECS...: best of SECS, mmap's best / it, and every run
# (uses $bn, the mmap side's best)
dask_row() {
	local b
	b=$(minf "${@:2}")
	printf '  %-44s %8s %7s   %s\n' "$1" "$b" "$(ratio "$bn" "$b")" "${*:2}"
}

zarr_section() {
	echo "zarr ..." >&2
	zarr_mib=${BENCH_ZARR_MIB:-512}
	local zarr_n=${BENCH_ZARR_CHUNKS:-100000}
	zd=$work/src/zarr
	mkdir -p "$zd"
	"$py" - "$zd" "$zarr_mib" "$zarr_n" <<'PYEOF'
import os, sys
import numpy as np
d, mib, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = (mib << 20) // (4 * 16384)
a = np.lib.format.open_memmap(os.path.join(d, "big.npy"), mode="w+", dtype="<i4",
                              shape=(rows, 16384))
for i in range(0, rows, 512):
    a[i:i + 512] = np.arange(i * 16384, min(rows, i + 512) * 16384,
                             dtype=np.int64).reshape(-1, 16384) % 1000
a.flush()
np.save(os.path.join(d, "many.npy"), np.zeros((n, 128), dtype="<f8"))
PYEOF
	# the plain-folder copy of the store, made once through the mount
	start_fs a
	mkdir -p "$work/src/zcopy"
	cp -r "$work/mnt_a/zarr/big.npy/big.zarr" "$work/src/zcopy/"
	stop_fs a
	sync
	local zc=() zc2=() zdata=() dz=() dz2=() df=() dp=() dp2=() dn=() zls=() zrss=() k mibs
	local chunks rss0 rss1 count loads=()
	for _ in $(seq "$runs"); do
		for k in 1 2; do
			start_fs a
			cat "$zd/big.npy" >/dev/null
			mapfile -t chunks < <(cd "$work/mnt_a/zarr/big.npy/big.zarr" &&
				ls | grep -v '^zarr.json$' | sort -V)
			mibs=$(cd "$work/mnt_a/zarr/big.npy/big.zarr" && read_mibs $k "${chunks[@]}")
			if [ $k = 1 ]; then zc+=("$mibs"); else zc2+=("$mibs"); fi
			stop_fs a
		done
		start_fs a
		cat "$zd/big.npy" >/dev/null
		zdata+=("$(read_mibs 1 "$work/mnt_a/zarr/big.npy/data")")
		stop_fs a
		start_fs a
		cat "$zd/big.npy" >/dev/null
		dz+=("$(dask_secs zarr)")
		dz2+=("$(dask_secs zarr)")  # the chunk files now in the mount's page cache
		stop_fs a
		start_fs p
		cat "$work/src/zcopy/big.zarr/"* >/dev/null
		dp+=("$(dask_secs pll)")
		dp2+=("$(dask_secs pll)")
		stop_fs p
		df+=("$(dask_secs folder)")
		cat "$zd/big.npy" >/dev/null
		dn+=("$(dask_secs numpy)")
		loads+=("$(cut -d' ' -f1 /proc/loadavg)")
		start_fs a -o zarr_chunk=1024
		cat "$zd/many.npy" >/dev/null
		ls "$work/mnt_a/zarr/many.npy" >/dev/null
		rss0=$(awk '/^VmRSS/ {print $2}' "/proc/${pids[-1]}/status")
		zls+=("$(secs ls "$work/mnt_a/zarr/many.npy/many.zarr")")
		rss1=$(awk '/^VmRSS/ {print $2}' "/proc/${pids[-1]}/status")
		zrss+=("$(kib_mib "$rss0")->$(kib_mib "$rss1")")
		count=$(ls -f "$work/mnt_a/zarr/many.npy/many.zarr" | wc -l)
		# . .. .zarray .zattrs zarr.json and the chunks
		[ "$count" -eq $((zarr_n + 5)) ] || { echo "many.zarr lists $count entries" >&2; exit 1; }
		stop_fs a
	done
	local bn
	bn=$(minf "${dn[@]}")
	echo
	echo "B.zarr/ of a ${zarr_mib} MiB int32 .npy (8 MiB chunks), fresh mount each, best of $runs"
	echo "(load average after each round's dask runs: ${loads[*]})"
	row "measure" "arrayfs B.zarr/" "reference"
	row "every chunk file, 1 reader / data (MiB/s)" "$(max "${zc[@]}")" "$(max "${zdata[@]}")"
	row "  all runs" "${zc[*]}" "${zdata[*]}"
	row "every chunk file, 2 readers (MiB/s)" "$(max "${zc2[@]}")" "-"
	row "  all runs" "${zc2[*]}" "-"
	echo "dask sum (s, best; mmap's time / this: target >= 0.8x through the mount):"
	dask_row "from_zarr(mount), 1st run" "${dz[@]}"
	dask_row "from_zarr(mount), 2nd run (its page cache)" "${dz2[@]}"
	dask_row "from_zarr(passthrough_ll over the copy), 1st" "${dp[@]}"
	dask_row "from_zarr(passthrough_ll over the copy), 2nd" "${dp2[@]}"
	dask_row "from_zarr(plain-folder copy)" "${df[@]}"
	dask_row "from_array(numpy.load(mmap_mode='r'))" "${dn[@]}"
	row "ls of B.zarr/ with ${zarr_n} chunks (s)" "$(minf "${zls[@]}")" "-"
	row "  daemon RSS before->after the ls (MiB)" "${zrss[*]}" "-"
}
