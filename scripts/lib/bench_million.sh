# SPDX-License-Identifier: MIT
# The "a million arrays in one folder" section of scripts/bench (issue 29),
# sourced by it (its helpers and variables: work, root, builddir, py, runs,
# start_fs, stop_fs, secs, minf, row, and first_pass from
# bench_firstpass.sh). BENCH_ONLY=million runs it alone; the full run
# leaves it out (a million files take ~4 GB of blocks and many minutes).
#
# A folder of BENCH_MILLION_N (1,000,000) 4x4 uint8 .npy files named as
# tests/bench/nowork_ll names its entries (imgNNNNN.npy), written once by
# Python (the 144 bytes of each file directly: the build time is printed).
# With BENCH_MILLION_SCALE=1 the section runs at BENCH_MILLION_SMALL
# (100,000) first, then at N, and prints each listing's growth; with
# BENCH_MILLION_WALKS=0 it leaves out du -s and find (about 500 s each at
# 1,000,000, four of them a run). Each timed run: the sources walked
# right before it (every file read once by tests/bench/bench_files, so
# their metadata and pages are cached), a fresh mount, best of
# BENCH_RUNS, the 1-minute load average printed with each table:
#   - `ls -f` and os.scandir without stat (names only): arrayfs against
#     nowork_ll -o files=N,size=16 (the same names) and the source folder;
#   - `ls -l`: arrayfs against `ls -l` of the source plus every source's
#     first 256 bytes read (bench_files), and against nowork_ll's `ls -l`;
#   - `du -s`, `find -name '*.npy'`, `.stack` (stat, ls) and `.zarr`
#     (ls, cat .zgroup) lookups of the folder, each in a fresh mount (du
#     and find also with -o max_walked=0, every walked array folder kept
#     by the kernel: the peer of the walk bound, walked.h), and
#     `ls -l` again in the mount that has just listed it (a second listing);
#   - the daemon's peak RSS after `ls -l` (every entry held by the kernel)
#     and its RSS once they are forgotten (drop_caches 2 as root, RSS
#     settled), and its most open fds;
#   - the first pass: every data read once after os.listdir, per file,
#     against nowork_ll's (first_pass of bench_firstpass.sh, interleaved)
#     and nowork_ll -o auto's (names-only listings past the first batch,
#     as arrayfs gives them: the same three requests a file, no work).

# mil_make DIR N: N tiny arrays in DIR, once; prints the seconds it took
mil_make() {
	mkdir -p "$1"
	secs "$py" - "$1" "$2" <<'EOF'
import os, sys
import numpy as np
d, n = sys.argv[1], int(sys.argv[2])
a = np.arange(16, dtype=np.uint8).reshape(4, 4)
head = b"\x93NUMPY\x01\x00" + (118).to_bytes(2, "little")
text = "{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4), }"
head += (text + " " * (117 - len(text)) + "\n").encode()
assert len(head) == 128
body = head + a.tobytes()
for i in range(n):
    fd = os.open(os.path.join(d, "img%05d.npy" % i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, body)
    os.close(fd)
assert (np.load(os.path.join(d, "img00000.npy")) == a).all()
EOF
}

# mil_scandir DIR: os.scandir of DIR, names only (no stat asked for)
mil_scandir() {
	"$py" -c "import os, sys; print(sum(1 for _ in os.scandir(sys.argv[1])))" "$1"
}

# mil_walk DIR: the sources' metadata and first bytes cached
mil_walk() { "$root/$builddir/tests/bench/bench_files" "$1" >/dev/null; }

# mil_kib PID FIELD: VmHWM or VmRSS of PID, KiB
mil_kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

# mil_settled PID: its RSS once it has not fallen for a second (at most 30 s)
mil_settled() {
	local last now same=0
	last=$(mil_kib "$1" VmRSS)
	for _ in $(seq 300); do
		sleep 0.1
		now=$(mil_kib "$1" VmRSS)
		if [ "$now" -lt "$last" ]; then last=$now; same=0; else same=$((same + 1)); fi
		[ "$same" -ge 10 ] && break
	done
	echo "$last"
}

# mil_fresh CMD...: walk the sources, mount arrayfs (with the options in
# the array mil_opts), time CMD (MNT in an
# argument stands for the folder in the mount), unmount; sets mil_last_t
# (seconds) and mil_last_kib (the daemon's peak RSS), raises mil_fds
mil_fresh() {
	local args=("${@//MNT/$work/mnt_a/$mil_dir}") fds
	mil_walk "$work/src/$mil_dir"
	start_fs a "${mil_opts[@]}"
	mil_last_t=$(secs "${args[@]}")
	mil_last_kib=$(mil_kib "${pids[-1]}" VmHWM)
	fds=$(find "/proc/${pids[-1]}/fd" -mindepth 1 -maxdepth 1 | wc -l)
	[ "$fds" -gt "$mil_fds" ] && mil_fds=$fds
	stop_fs a
}

# mil_best NAME CMD...: best of $runs fresh-mount timings of CMD into
# mil_t[NAME] ("best (all runs)") and the largest peak RSS into mil_r[NAME]
mil_best() {
	local name=$1 all=() r=0
	shift
	for _ in $(seq "$runs"); do
		mil_fresh "$@"
		all+=("$mil_last_t")
		[ "$mil_last_kib" -gt "$r" ] && r=$mil_last_kib
	done
	mil_t[$name]="$(minf "${all[@]}") (${all[*]})"
	mil_r[$name]=$r
}

# mil_peer NAME CMD...: best of $runs of CMD on the sources or nowork_ll
# (mounted by the caller), the sources walked right before each
mil_peer() {
	local name=$1 all=()
	shift
	for _ in $(seq "$runs"); do
		mil_walk "$work/src/$mil_dir"
		all+=("$(secs "$@")")
	done
	mil_t[$name]="$(minf "${all[@]}") (${all[*]})"
}

# mil_ls_l_src DIR: ls -l of DIR and every file's first 256 bytes
mil_ls_l_src() { ls -l "$1" >/dev/null && mil_walk "$1"; }

# mil_one N: measure a folder of N arrays; fills mil_t, mil_r, mil_mem
mil_one() {
	local n=$1 src rss_held rss_forgot fp=() fpn=() fpa=() ls2=() pid t
	mil_dir=m$n
	src=$work/src/$mil_dir
	echo "million: writing $n arrays ..." >&2
	mil_build_s=$(mil_make "$src" "$n")
	mil_fds=0
	mil_walk "$src"
	echo "million: names-only listings ..." >&2
	mil_best ls_f ls -f MNT
	mil_best scandir mil_scandir MNT
	mil_best ls_l ls -l MNT
	if [ "${BENCH_MILLION_WALKS:-1}" = 1 ]; then
		mil_best du du -s MNT
		mil_best find find MNT -name '*.npy'
		mil_opts=(-o max_walked=0)
		mil_best du_all du -s MNT
		mil_best find_all find MNT -name '*.npy'
		mil_opts=()
	else
		local k
		for k in du find du_all find_all; do
			mil_t[$k]="- (BENCH_MILLION_WALKS=0)"
			mil_r[$k]=-
		done
	fi
	mil_best stack sh -c 'stat "$1/.stack" && ls "$1/.stack"' - MNT
	mil_best zarr sh -c 'ls "$1/.zarr" && cat "$1/.zarr/.zgroup"' - MNT
	echo "million: the peers ..." >&2
	mil_peer src_ls_f ls -f "$src"
	mil_peer src_scandir mil_scandir "$src"
	mil_peer src_ls_l mil_ls_l_src "$src"
	start_fs n -o "files=$n,size=16"
	mil_peer nw_ls_f ls -f "$work/mnt_n"
	mil_peer nw_scandir mil_scandir "$work/mnt_n"
	stop_fs n
	local nw_all=()
	for _ in $(seq "$runs"); do  # a fresh nowork_ll each: ls -l looks every name up
		start_fs n -o "files=$n,size=16"
		nw_all+=("$(secs ls -l "$work/mnt_n")")
		stop_fs n
	done
	mil_t[nw_ls_l]="$(minf "${nw_all[@]}") (${nw_all[*]})"
	# the same with xattrs served as arrayfs serves them: what the probes
	# that reach the daemon cost on a server that does no work
	nw_all=()
	for _ in $(seq "$runs"); do
		start_fs n -o "files=$n,size=16,xattrs"
		nw_all+=("$(secs ls -l "$work/mnt_n")")
		stop_fs n
	done
	mil_t[nw_ls_l_xa]="$(minf "${nw_all[@]}") (${nw_all[*]})"
	echo "million: memory, a second listing, the first pass ..." >&2
	mil_walk "$src"
	start_fs a
	pid=${pids[-1]}
	ls -l "$work/mnt_a/$mil_dir" >/dev/null
	rss_held=$(mil_kib "$pid" VmHWM)
	for _ in $(seq "$runs"); do
		ls2+=("$(secs ls -l "$work/mnt_a/$mil_dir")")
	done
	mil_t[ls_l2]="$(minf "${ls2[@]}") (${ls2[*]})"
	rss_forgot=-
	if [ "$(id -u)" = 0 ]; then
		echo 2 >/proc/sys/vm/drop_caches
		rss_forgot=$(mil_settled "$pid")
	fi
	mil_mem="$rss_held / $rss_forgot"
	stop_fs a
	start_fs h
	local hello_pid=${pids[-1]} nw_pid na_pid got
	for _ in $(seq "$runs"); do
		mil_walk "$src"
		start_fs n -o "files=$n,size=16"
		nw_pid=${pids[-1]}
		start_fs na -o "files=$n,size=16,auto"
		na_pid=${pids[-1]}
		start_fs a
		# fields 3, 4 and 12: arrayfs, nowork_ll, nowork_ll -o auto
		read -r -a got < <(first_pass time \
			"$work/mnt_a/$mil_dir" "$work/mnt_n" "$work/mnt_h" "${pids[-1]}" "$nw_pid" \
			"$work/mnt_na" "$na_pid")
		fp+=("${got[2]}"); fpn+=("${got[3]}"); fpa+=("${got[11]}")
		stop_fs a
		stop_fs na "$na_pid"
		stop_fs n "$nw_pid"
	done
	stop_fs h "$hello_pid"
	mil_t[fp]="$(minf "${fp[@]}") (${fp[*]})"
	mil_t[nw_fp]="$(minf "${fpn[@]}") (${fpn[*]})"
	mil_t[na_fp]="$(minf "${fpa[@]}") (${fpa[*]})"
	rm -rf "$src"
}

# mil_x A B: A's best over B's best
mil_x() {
	if [ "${1%% *}" = - ] || [ "${2%% *}" = - ]; then echo -; return; fi
	"$py" -c "import sys; print('%.2fx' % (float(sys.argv[1].split()[0]) / float(sys.argv[2].split()[0])))" "$1" "$2"
}

mil_table() {
	local n=$1
	echo
	echo "a folder of $n 4x4 uint8 .npy (written in ${mil_build_s} s), best of $runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	row "operation (s: best (all runs))" "arrayfs (fresh mount)" "peer"
	row "ls -f (names only)" "${mil_t[ls_f]}" "nowork_ll ${mil_t[nw_ls_f]}"
	row "  over nowork_ll (target <= 3x) / source" "$(mil_x "${mil_t[ls_f]}" "${mil_t[nw_ls_f]}")" "source ${mil_t[src_ls_f]}"
	row "os.scandir, no stat" "${mil_t[scandir]}" "nowork_ll ${mil_t[nw_scandir]}"
	row "  over nowork_ll (target <= 3x) / source" "$(mil_x "${mil_t[scandir]}" "${mil_t[nw_scandir]}")" "source ${mil_t[src_scandir]}"
	row "ls -l" "${mil_t[ls_l]}" "nowork_ll ${mil_t[nw_ls_l]}"
	row "  over nowork_ll (target <= 2x)" "$(mil_x "${mil_t[ls_l]}" "${mil_t[nw_ls_l]}")" "-"
	row "  over source ls -l + 256 B each (<= 1.5x)" "$(mil_x "${mil_t[ls_l]}" "${mil_t[src_ls_l]}")" "source ${mil_t[src_ls_l]}"
	row "  over nowork_ll -o xattrs" "$(mil_x "${mil_t[ls_l]}" "${mil_t[nw_ls_l_xa]}")" "nowork_ll -o xattrs ${mil_t[nw_ls_l_xa]}"
	row "ls -l again, same mount (second listing)" "${mil_t[ls_l2]}" "-"
	row "du -s" "${mil_t[du]}" "-"
	row "find -name '*.npy'" "${mil_t[find]}" "-"
	row "du -s / find, -o max_walked=0 (all kept)" "${mil_t[du_all]}" "${mil_t[find_all]}"
	row ".stack: stat + ls" "${mil_t[stack]}" "-"
	row ".zarr: ls + cat .zgroup" "${mil_t[zarr]}" "-"
	row "peak RSS of each (KiB): ls -f, ls -l, du" "${mil_r[ls_f]} ${mil_r[ls_l]} ${mil_r[du]}" "-"
	row "  find, .stack, .zarr" "${mil_r[find]} ${mil_r[stack]} ${mil_r[zarr]}" "-"
	row "  du, find with -o max_walked=0" "${mil_r[du_all]} ${mil_r[find_all]}" "-"
	row "RSS held after ls -l / forgotten (KiB)" "$mil_mem" "targets 262144 / 65536 at 1M"
	row "most open fds" "$mil_fds" "-"
	row "first pass after a listing (us a file)" "${mil_t[fp]}" "nowork_ll ${mil_t[nw_fp]}"
	row "  over nowork_ll (target <= 1.3x)" "$(mil_x "${mil_t[fp]}" "${mil_t[nw_fp]}")" "-"
	row "  over the names-only floor" "$(mil_x "${mil_t[fp]}" "${mil_t[na_fp]}")" "nowork_ll -o auto ${mil_t[na_fp]}"
}

million_section() {
	declare -gA mil_t mil_r
	declare -ga mil_opts=()
	local n=${BENCH_MILLION_N:-1000000} ns k
	local small=${BENCH_MILLION_SMALL:-100000}
	ns=("$n")
	[ "${BENCH_MILLION_SCALE:-0}" = 1 ] && [ "$n" != "$small" ] && ns=("$small" "$n")
	echo "million: df of $work before:" >&2
	df -h "$work" >&2
	df -i "$work" >&2
	declare -gA mil_small
	for n in "${ns[@]}"; do
		mil_one "$n"
		mil_table "$n"
		if [ "${#ns[@]}" = 2 ] && [ "$n" = "$small" ]; then
			for k in "${!mil_t[@]}"; do mil_small[$k]=${mil_t[$k]}; done
		fi
	done
	if [ "${#ns[@]}" = 2 ]; then
		echo
		echo "growth from $small to ${ns[1]} arrays (best over best; target <= 11x at 10x the arrays)"
		# the peers' own growth, in the same run: what ls and the kernel
		# add at ten times the names (ls -l sorts them) with no work done
		local peer
		for k in ls_f scandir ls_l ls_l2 du find du_all find_all stack zarr; do
			peer=-
			if [ -n "${mil_t[nw_$k]:-}" ]; then
				peer="nowork_ll $(mil_x "${mil_t[nw_$k]}" "${mil_small[nw_$k]}"), source $(mil_x "${mil_t[src_$k]}" "${mil_small[src_$k]}")"
			fi
			row "  $k" "$(mil_x "${mil_t[$k]}" "${mil_small[$k]}")" "$peer"
		done
	fi
}
