# SPDX-License-Identifier: MIT
# The .stack section of scripts/bench (sourced by it, which defines $work,
# $root, $builddir, $runs, $small_n, $py, start_fs, stop_fs, secs and row,
# and has made the BENCH_SMALL_N 28x28 uint8 .npy files in $work/src/small).
#
# The 60,000 files as one array. A fresh mount for each timed run, the
# sources read right before it, best of BENCH_RUNS: (d) the first lookup
# of .stack (stat: every header read), then (a) the first read of
# small/.stack/data with 1 MiB reads (dd), so (a) + (d) is what a first
# reader waits; (b) the source files read directly with open/read/close
# (tests/bench/bench_files, C); (c) every X.npy/data through the mount the
# same way, after one ls; (e) the daemon's peak RSS (VmHWM) and most open
# fds (sampled every 20 ms) over (d) and (a). Then .stack/data is checked
# against the members' bytes.

# fd_sampler PID OUT: the daemon's open fds every 20 ms into OUT, until it
# exits (then its last sample may fail: never an error)
fd_sampler() {
	while kill -0 "$1" 2>/dev/null; do
		{ find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null || true; } | wc -l
		sleep 0.02
	done >"$2" || true
}

# st_probe PID FDS_FILE: remember its peak RSS and the most fds sampled
st_probe() {
	local hwm fds
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$1/status")
	fds=$(sort -n "$2" | tail -1)
	[ "$hwm" -gt "$st_kib" ] && st_kib=$hwm
	[ "${fds:-0}" -gt "$st_fds" ] && st_fds=$fds
	return 0
}

# mins X...: the least of "SECONDS[(N failed)]" values
mins() { "$py" -c "import sys; print('%.3f' % min(float(x.split('(')[0]) for x in sys.argv[1:]))" "$@"; }
ratio() { "$py" -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$@"; }
plus() { "$py" -c "import sys; print('%.3f' % (float(sys.argv[1]) + float(sys.argv[2])))" "$@"; }

stack_check() {
	"$py" - "$work" <<'EOF'
import hashlib, os, sys
w = sys.argv[1]
names = sorted(n for n in os.listdir(w + "/src/small") if n.endswith(".npy"))
h = hashlib.sha256()
for n in names:
    with open(os.path.join(w, "src/small", n), "rb") as f:
        h.update(f.read()[-784:])
g = hashlib.sha256()
with open(w + "/mnt_a/small/.stack/data", "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        g.update(b)
assert g.digest() == h.digest(), ".stack/data differs from the members"
EOF
}

stack_section() {
	echo ".stack ..." >&2
	local bench_files=$root/$builddir/tests/bench/bench_files
	st_a=(); st_b=(); st_c=(); st_d=(); st_ad=(); st_kib=0; st_fds=0
	for _ in $(seq "$runs"); do
		start_fs a
		fd_sampler "${pids[-1]}" "$work/fds.a" &
		"$bench_files" "$work/src/small" >/dev/null
		st_d+=("$(secs stat "$work/mnt_a/small/.stack")")
		st_a+=("$(secs dd if="$work/mnt_a/small/.stack/data" of=/dev/null bs=1M status=none)")
		st_ad+=("$(plus "${st_d[-1]}" "${st_a[-1]}")")
		st_probe "${pids[-1]}" "$work/fds.a"
		stop_fs a
		wait $! || true
		"$bench_files" "$work/src/small" >/dev/null
		st_b+=("$("$bench_files" "$work/src/small" | awk '{print $1}')")
		start_fs a
		ls "$work/mnt_a/small" >/dev/null
		"$bench_files" "$work/src/small" >/dev/null
		st_c+=("$("$bench_files" "$work/mnt_a/small" /data |
			awk '{print $1 ($3 > 0 ? "(" $3 "failed)" : "")}')")
		stop_fs a
	done
	start_fs a
	stack_check
	stop_fs a
	local sa sb sc sad
	sa=$(mins "${st_a[@]}"); sb=$(mins "${st_b[@]}"); sc=$(mins "${st_c[@]}")
	sad=$(mins "${st_ad[@]}")
	echo
	echo ".stack of ${small_n} 28x28 uint8 .npy files, fresh mount each, best of $runs"
	row "measure" "seconds (best)" "all runs"
	row "(d) first lookup of .stack (stat)" "$(mins "${st_d[@]}")" "${st_d[*]}"
	row "(a) then .stack/data, 1st read, dd bs=1M" "$sa" "${st_a[*]}"
	row "(a)+(d) what a first reader waits" "$sad" "${st_ad[*]}"
	row "(b) the sources, open/read/close (C)" "$sb" "${st_b[*]}"
	row "(c) every X.npy/data, open/read/close (C)" "$sc" "${st_c[*]}"
	row "(a)/(b) (target <= 1.5)" "$(ratio "$sa" "$sb")" "(a+d)/(b): $(ratio "$sad" "$sb")"
	row "(c)/(a) (target >= 10)" "$(ratio "$sc" "$sa")" "(c)/(a+d): $(ratio "$sc" "$sad")"
	row "(e) daemon peak RSS (MiB) / most open fds" "$((st_kib / 1024)) / $st_fds" "-"
}
