# SPDX-License-Identifier: MIT
# The `.zarr/` group section of scripts/bench (issue 27), sourced by it
# after bench_zarr.sh (which defines read_mibs, kib_mib and ratio; bench
# itself defines $work, $root, $builddir, $runs, $py, start_fs, stop_fs,
# secs, minf, max and row, and its EXIT trap unmounts every mount
# start_fs made and stops its daemon, so a run that fails halfway leaves
# nothing mounted). BENCH_ONLY=group runs it alone.
#
# The peer is the same data converted to Zarr on ext4 (what a user does
# today): ds.to_zarr(consolidated=True) of the Dataset, with the chunks
# and encoding the mount gives (no compressor), into $work/src/gcopy.
# A fresh mount for each timed run, best of BENCH_RUNS, both sides in
# the same round, each side's files read right before its timed call;
# Python imports happen before the clock starts:
# (1) xarray.open_zarr of an npz of 100 stored members (1-D and 2-D, f8
#     and i4) through MOUNT/.../x.npz/.zarr against the same call on the
#     copy (target <= 2x);
# (2) ds.load() of every variable of a BENCH_GROUP_MIB (1024) MiB stored
#     npz (8 members), the first read through the mount (open_zarr
#     untimed just before), against the copy (target >= 0.5x in MiB/s);
#     each side's process first touches and lets go twice that much
#     fresh memory (untimed, printed): on this VM the first touch of
#     memory the host has taken back (virtio_balloon) costs up to 3 s a
#     GiB, and without it the side that runs first pays it;
#     the bounds: every chunk file of the group read once by 2 threads
#     taking turns, 1 MiB reads (the mount's first read, the copy's, and
#     as many files of that size through tests/bench/nowork_ll with
#     arrayfs's readahead window: the kernel's FUSE page cache with no
#     work behind it), and the npz itself read once;
# (3) zarr.open_consolidated of a folder of 10,000 small .npy
#     (MOUNT/.../many/.zarr: its .zmetadata built from every header)
#     against the first `ls -l` of that folder through a fresh mount
#     (target <= 2x); the bounds: `ls -l` of 10,000 array folders
#     through tests/bench/nowork_ll (no work: the kernel's and libfuse's
#     share) and the 10,000 sources read directly (bench_files, C);
# (4) the daemon's VmRSS right after mounting, right after every array
#     of that group was read through zarr.open_consolidated (a Python
#     process that has exited), and after the kernel forgot the mount's
#     inodes (echo 2 > /proc/sys/vm/drop_caches, needs root: it drops
#     every unused dentry and inode of the machine; then RSS sampled
#     until it stays put for 1 s, at most 10 s) (target: within 4 MiB of
#     before). The npz groups of (1) and (2), through the mount and as
# copies, are checked against numpy.load once; (3) checks the number of
# arrays and (4)'s reads every array's values. Each ratio row gives the
# ratio of the bests and, beside it, each round's.

group_n=10000

# group_py MODE ARGS...: the timed Python calls (see group_section)
group_py() {
	"$py" - "$@" <<'PYEOF'
import os, sys, time
import numpy as np
import xarray
import zarr
mode, path = sys.argv[1], sys.argv[2]
if mode == "make":  # DIR MIB: x.npz (100 members), big.npz, many/
    mib = int(sys.argv[3])
    import zipfile
    rng = np.random.default_rng(27)
    def stored_npz(name, members):  # as np.savez writes, a member at a time
        with zipfile.ZipFile(os.path.join(path, name), "w", zipfile.ZIP_STORED,
                             allowZip64=True) as z:
            for key, make in members:
                with z.open(key + ".npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, make())
    def small(i):
        if i % 2:
            return lambda: rng.integers(0, 1000, (40, 25 + i), dtype="<i4")
        return lambda: rng.random(1000 + i)
    stored_npz("x.npz", [("m%03d" % i, small(i)) for i in range(100)])
    rows = (mib << 20) // 8 // 8 // 4096  # 8 members of (rows, 4096) f8
    stored_npz("big.npz", [("v%d" % i, lambda: rng.random((rows, 4096)))
                           for i in range(8)])
    os.mkdir(os.path.join(path, "many"))
    for i in range(int(sys.argv[4])):
        np.save(os.path.join(path, "many", "a%05d.npy" % i), np.full(16, i, "<f8"))
elif mode == "copy":  # MOUNT_GROUP COPY: the converted copy, ext4
    ds = xarray.open_zarr(path)
    ds.to_zarr(sys.argv[3], mode="w", consolidated=True)
elif mode == "check":  # NPZ GROUP: every variable equals numpy.load's
    with np.load(path) as z:
        ds = xarray.open_zarr(sys.argv[3])
        assert sorted(ds.data_vars) == sorted(k[:-4] if k.endswith(".npy") else k
                                              for k in z.files), "variables differ"
        for k in z.files:
            assert np.array_equal(ds[k].values, z[k]), "%s differs" % k
elif mode == "open":  # GROUP N: seconds of xarray.open_zarr
    t0 = time.perf_counter()
    ds = xarray.open_zarr(path)
    t = time.perf_counter() - t0
    assert len(ds.data_vars) == int(sys.argv[3]), "open_zarr: %d variables" % len(ds.data_vars)
    print("%.4f" % t)
elif mode == "load":  # GROUP MIB: "MiB/s of ds.load() TOUCH_S"
    # ds.load() writes twice its size into fresh memory (the chunks read,
    # the arrays): touched first here, and let go, so that each side
    # finds memory this VM has backed (TOUCH_S: how long that took)
    mib = int(sys.argv[3])
    t0 = time.perf_counter()
    warm = np.ones((2 * mib) << 17)
    del warm
    touch = time.perf_counter() - t0
    ds = xarray.open_zarr(path)
    t0 = time.perf_counter()
    ds.load()
    t = time.perf_counter() - t0
    print("%.0f %.2f" % (mib / t, touch))
elif mode == "consolidated":  # GROUP N: seconds of zarr.open_consolidated
    t0 = time.perf_counter()
    g = zarr.open_consolidated(path)
    t = time.perf_counter() - t0
    n = sum(1 for _ in g.array_keys())
    assert n == int(sys.argv[3]), "open_consolidated: %d arrays" % n
    print("%.4f" % t)
elif mode == "readall":  # GROUP N: every array read, checked
    g = zarr.open_consolidated(path)
    n = 0
    for k, a in g.arrays():
        assert (a[...] == int(k[1:])).all(), "%s differs" % k
        n += 1
    assert n == int(sys.argv[3]), "read %d arrays" % n
PYEOF
}

# nowork_readahead: give the nowork_ll mount arrayfs's readahead window
# (its default -o readahead_kb, set the same way: sysfs, root only)
nowork_readahead() {
	[ "$(id -u)" -eq 0 ] || return 0
	echo 512 >"/sys/class/bdi/$(mountpoint -d "$work/mnt_n")/read_ahead_kb"
}

# round_ratios "A..." "B...": A/B of each round (both sides of a round
# ran back to back, so under a changing load these compare best)
round_ratios() {
	"$py" -c "import sys; print(' '.join('%.2fx' % (float(a) / float(b)) for a, b in zip(sys.argv[1].split(), sys.argv[2].split())))" "$1" "$2"
}

# rss_kib PID: the daemon's VmRSS in KiB
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# rss_settled PID: VmRSS once it has stayed put for 1 s (5 samples), or
# after 10 s
rss_settled() {
	local last=-1 same=0 r
	for _ in $(seq 50); do
		r=$(rss_kib "$1")
		if [ "$r" = "$last" ]; then
			same=$((same + 1))
			[ $same -ge 5 ] && break
		else
			same=0
		fi
		last=$r
		sleep 0.2
	done
	echo "$r"
}

# read_tree DIR: every file under DIR read once (into the page cache)
read_tree() { find "$1" -type f -print0 | xargs -0 cat >/dev/null; }

group_section() {
	echo "zarr groups ..." >&2
	local mib=${BENCH_GROUP_MIB:-1024}
	local gd=$work/src/group gc=$work/src/gcopy mg=$work/mnt_a/group
	local bench_files=$root/$builddir/tests/bench/bench_files
	mkdir -p "$gd" "$gc"
	group_py make "$gd" "$mib" "$group_n"
	# the converted copies, made once through a mount; and numpy's word
	start_fs a
	group_py copy "$mg/x.npz/.zarr" "$gc/x.zarr"
	group_py copy "$mg/big.npz/.zarr" "$gc/big.zarr"
	group_py check "$gd/x.npz" "$mg/x.npz/.zarr"
	group_py check "$gd/x.npz" "$gc/x.zarr"
	group_py check "$gd/big.npz" "$mg/big.npz/.zarr"
	group_py check "$gd/big.npz" "$gc/big.zarr"
	stop_fs a
	sync
	# the group's chunk files (every file of the copy but the metadata)
	local chunks nchunks chunk_size
	mapfile -t chunks < <(cd "$gc/big.zarr" && find . -type f ! -name '.z*' ! -name zarr.json | sort -V)
	nchunks=${#chunks[@]}
	chunk_size=$(stat -c %s "$gc/big.zarr/${chunks[0]}")
	local fm=() fc=() fn=() touch=() out
	local om=() oc=() lm=() lc=() ld=() cm=() cl=() cn=() cs=() rss=() loads=()
	local r0 r1 r2 d2 worst=0
	for _ in $(seq "$runs"); do
		# (1) open_zarr of 100 members
		start_fs a
		cat "$gd/x.npz" >/dev/null
		om+=("$(group_py open "$mg/x.npz/.zarr" 100)")
		stop_fs a
		read_tree "$gc/x.zarr"
		oc+=("$(group_py open "$gc/x.zarr" 100)")
		# (2) ds.load() of the big npz
		start_fs a
		cat "$gd/big.npz" >/dev/null
		out=$(group_py load "$mg/big.npz/.zarr" "$mib")
		lm+=("${out% *}"); touch+=("${out#* }")
		stop_fs a
		read_tree "$gc/big.zarr"
		out=$(group_py load "$gc/big.zarr" "$mib")
		lc+=("${out% *}"); touch+=("${out#* }")
		cat "$gd/big.npz" >/dev/null
		ld+=("$(read_mibs 1 "$gd/big.npz")")
		# its bounds: the chunk files alone, 2 readers
		start_fs a
		cat "$gd/big.npz" >/dev/null
		fm+=("$(cd "$mg/big.npz/.zarr" && read_mibs 2 "${chunks[@]}")")
		stop_fs a
		read_tree "$gc/big.zarr"
		fc+=("$(cd "$gc/big.zarr" && read_mibs 2 "${chunks[@]}")")
		start_fs n -o "files=$nchunks,size=$chunk_size"
		nowork_readahead
		fn+=("$(cd "$work/mnt_n" && read_mibs 2 img*/data)")
		stop_fs n
		# (3) open_consolidated of 10,000 arrays against the first ls -l
		start_fs a
		"$bench_files" "$gd/many" >/dev/null
		cm+=("$(group_py consolidated "$mg/many/.zarr" "$group_n")")
		stop_fs a
		start_fs a
		"$bench_files" "$gd/many" >/dev/null
		cl+=("$(secs ls -l "$mg/many")")
		stop_fs a
		start_fs n -o "files=$group_n"
		cn+=("$(secs ls -l "$work/mnt_n")")
		stop_fs n
		"$bench_files" "$gd/many" >/dev/null
		cs+=("$("$bench_files" "$gd/many" | awk '{print $1}')")
		# (4) the daemon's RSS around reading the whole group
		start_fs a
		"$bench_files" "$gd/many" >/dev/null
		stat "$work/mnt_a" >/dev/null
		r0=$(rss_settled "${pids[-1]}")
		group_py readall "$mg/many/.zarr" "$group_n"
		r1=$(rss_settled "${pids[-1]}")
		if [ "$(id -u)" -eq 0 ]; then
			echo 2 >/proc/sys/vm/drop_caches
			r2=$(rss_settled "${pids[-1]}")
		else
			r2=$r1
		fi
		rss+=("$(kib_mib "$r0")->$(kib_mib "$r1")->$(kib_mib "$r2")")
		d2=$((r2 - r0))
		[ $d2 -gt $worst ] && worst=$d2
		stop_fs a
		loads+=("$(cut -d' ' -f1 /proc/loadavg)")
	done
	local bom boc blm blc bcm bcl
	bom=$(minf "${om[@]}"); boc=$(minf "${oc[@]}")
	blm=$(max "${lm[@]}"); blc=$(max "${lc[@]}")
	bcm=$(minf "${cm[@]}"); bcl=$(minf "${cl[@]}")
	echo
	echo "zarr groups (.zarr/), fresh mount each, best of $runs; the peer: the same data converted with ds.to_zarr (ext4, consolidated, the same chunks, no compressor)"
	echo "(load average after each round: ${loads[*]})"
	row "measure" "arrayfs .zarr/" "peer"
	row "xarray.open_zarr, npz of 100 members (s)" "$bom" "$boc (copy)"
	row "  all runs" "${om[*]}" "${oc[*]}"
	row "  ratio (target <= 2x), each round" "$(ratio "$bom" "$boc")" "$(round_ratios "${om[*]}" "${oc[*]}")"
	row "ds.load(), ${mib} MiB stored npz (MiB/s)" "$blm" "$blc (copy)"
	row "  all runs" "${lm[*]}" "${lc[*]}"
	row "  ratio (target >= 0.5x), each round" "$(ratio "$blm" "$blc")" "$(round_ratios "${lm[*]}" "${lc[*]}")"
	row "  its $nchunks chunk files, 2 readers (MiB/s)" "$(max "${fm[@]}")" "$(max "${fc[@]}") (copy)"
	row "  all runs" "${fm[*]}" "${fc[*]}"
	row "  the same through nowork_ll (no work)" "$(max "${fn[@]}")" "${fn[*]}"
	row "  the npz read once, 1 MiB reads" "$(max "${ld[@]}")" "${ld[*]}"
	row "  first touch of $((2 * mib)) MiB, untimed (s)" "$(minf "${touch[@]}")" "${touch[*]}"
	row "open_consolidated, ${group_n} arrays (s)" "$bcm" "$bcl (first ls -l)"
	row "  all runs" "${cm[*]}" "${cl[*]}"
	row "  ratio (target <= 2x), each round" "$(ratio "$bcm" "$bcl")" "$(round_ratios "${cm[*]}" "${cl[*]}")"
	row "  bound: ls -l through nowork_ll (s)" "$(minf "${cn[@]}")" "${cn[*]}"
	row "  bound: the sources read directly (s)" "$(minf "${cs[@]}")" "${cs[*]}"
	row "daemon RSS (MiB) before->read->forgot" "${rss[0]}" "${rss[*]:1}"
	row "  worst growth after forget (target <= 4 MiB)" "$(kib_mib "$worst")" ""
}
