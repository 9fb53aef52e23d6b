# SPDX-License-Identifier: MIT
# The compressed section of scripts/bench (sourced by it, which defines
# $work, $root, $builddir, $runs, $py, start_fs, stop_fs, row, best and
# rates, and has mounted nothing at this point). Side by side in one run:
#
# deflated members: a 128 MiB np.savez_compressed member of uint8 0..15
# and one of float32 normal values (BENCH_INFLATE_MIB), each
#   - first sequential pass: through the codec with zlib and ISA-L
#     (bench_inflate --pass), `data` of a fresh mount (dd bs=1M; the mount
#     saves the member's index into a folder of its own), igzip -d of the
#     same deflate stream as a gzip file, unzip -p of the .npz;
#   - with the saved index: `data` of a fresh mount (its page cache is
#     new: a new daemon, new inodes), dd bs=1M, against igzip -d;
#   - what bounds that here: the codec's part alone (bench_inflate
#     --indexed, the daemon's threads and budget, no FUSE), and the FUSE
#     road decoded bytes take (B.ra of a big-endian .npy of the same size:
#     copied to the kernel as a member's are; daemon + dd CPU), whose CPU
#     per MiB summed over the machine's cores is the most any decoder
#     could reach through this mount on this machine;
#   - random 4 KiB reads in a fresh mount with the saved index (os.pread,
#     POSIX_FADV_RANDOM: the kernel reads only what is asked), median and
#     max of BENCH_RANDOM_READS (200);
#   - the index file's size against the member's;
#   - the daemon's peak RSS over all of it;
#   - an .npz of two arrays (half the size each, float32 then uint8) read
#     array after array in a fresh mount, as numpy.load does: saving their
#     indexes (the first array's export waits while the second is read)
#     against -o no_index.
# LZ4: a BENCH_LZ4_MIB (1536) MiB LZ4 .ra of float64 sine values with 2
# decimals (short sequences, a 50 % block: the slow case for a reader
# that must parse; bench_lz4 --write smooth): random 4 KiB reads in a
# fresh mount (median, max, the first: it walks the block up to its
# offset), the daemon's peak RSS, and a sequential dd bs=1M of data in a
# fresh mount against LZ4_decompress_safe of the whole block in memory
# (bench_lz4 --safe), and against the codec's part of it (bench_lz4
# --view: the view read in 512 KiB reads, walking and decoding ahead on
# a pool of 2 threads, as in the daemon), and against the same road with
# no decoding at all: B.ra of a big-endian .npy of the same size, whose
# bytes are swapped in memory and written to the kernel as an LZ4 view's
# are (the most any decoder could reach through FUSE here). Then data in
# O_DIRECT reads of 16 MiB (the kernel sends each as 16 reads of 1 MiB at
# once) in a -d mount, whose log says how many bytes its index decoded:
# each once, when those reads are served in order during the first pass.
# Best of BENCH_RUNS for throughput; the sources are read right before
# each timed run (page cache). CPU: the daemon's user + system time.

# rand_reads FILE N: "median max first" ms of N random 4 KiB preads
rand_reads() {
	"$py" - "$@" <<'EOF'
import os, sys, time
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
size = os.fstat(fd).st_size
ts = []
for off in np.random.default_rng(9).integers(0, size - 4096, n):
    t = time.monotonic()
    if len(os.pread(fd, 4096, int(off))) != 4096:
        sys.exit("short read")
    ts.append((time.monotonic() - t) * 1e3)
os.close(fd)
print("%.2f %.2f %.2f" % (float(np.median(ts)), max(ts), ts[0]))
EOF
}

# hwm PID: its peak RSS in MiB
hwm() { awk '/^VmHWM/ {printf "%d", $2 / 1024}' "/proc/$1/status"; }

# ratio A B: "N.NNx", the first fields of A and B divided
ratio() { "$py" -c "import sys; print('%.2fx' % (float(sys.argv[1].split()[0]) / float(sys.argv[2].split()[0])))" "$1" "$2"; }

# both parts (BENCH_ONLY=compressed); BENCH_ONLY=lz4 runs lz4_section alone,
# BENCH_ONLY=deflated deflated_section
compressed_section() {
	deflated_section
	lz4_section
}

deflated_section() {
	echo "compressed: deflated members ..." >&2
	scripts/lib/deps.sh test isal unzip >&2
	local inf_mib=${BENCH_INFLATE_MIB:-128} nrand=${BENCH_RANDOM_READS:-200}
	local inf=$work/src/inflate k size crc data idx
	mkdir -p "$inf"
	"$py" - "$inf" "$inf_mib" <<'EOF'
import os, struct, sys, zipfile
import numpy as np
d, mib = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(3)
n = mib << 20
arrays = {"u8": rng.integers(0, 16, size=n, dtype=np.uint8),
          "f32": rng.standard_normal(n // 4, dtype=np.float32)}
for name, a in arrays.items():
    path = os.path.join(d, name + ".npz")
    np.savez_compressed(path, a=a)
    info = zipfile.ZipFile(path).infolist()[0]
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        nlen, elen = struct.unpack("<HH", f.read(30)[26:30])
        f.seek(info.header_offset + 30 + nlen + elen)
        raw = f.read(info.compress_size)
    with open(os.path.join(d, name + ".raw"), "wb") as f:
        f.write(raw)
    with open(os.path.join(d, name + ".gz"), "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + raw)
        f.write(struct.pack("<II", info.CRC, info.file_size & 0xffffffff))
    with open(os.path.join(d, name + ".member"), "w") as f:
        f.write("%d %d\n" % (info.file_size, info.CRC))
np.save(os.path.join(d, "road.npy"), arrays["f32"].astype(">f4"))
half = {k: v[: v.size // 2] for k, v in arrays.items()}
np.savez_compressed(os.path.join(d, "two.npz"), a=half["f32"], b=half["u8"])
EOF
	declare -A c_zlib c_isal c_first c_igzip c_unzip c_idx c_rand c_size c_rss
	declare -A c_codec_idx c_bound
	local rss r road cores
	cores=$(nproc)
	# the road: best wall and best CPU (daemon + dd) of its own runs
	road=$(for _ in $(seq "$runs"); do
		start_fs a
		cat "$inf/road.npy" >/dev/null
		rates --with "${pids[-1]}" dd if="$work/mnt_a/inflate/road.npy/road.ra" of=/dev/null bs=1M status=none
		stop_fs a
	done | best)
	for k in u8 f32; do
		read -r size crc <"$inf/$k.member"
		data=$work/mnt_a/inflate/$k.npz/a.npy/data
		idx=$work/index-$k
		codec=$("$root/$builddir/tests/bench/bench_inflate" --pass "$inf/$k.raw" "$size" "$crc" "$runs")
		c_zlib[$k]=$(awk '$1 == "zlib" {printf "%.0f / %.0f", $2, $5}' <<<"$codec")
		c_isal[$k]=$(awk '$1 == "isa-l" {printf "%.0f / %.0f", $2, $5}' <<<"$codec")
		codec=$("$root/$builddir/tests/bench/bench_inflate" --indexed "$inf/$k.raw" "$size" "$crc" "$cores" "$runs")
		c_codec_idx[$k]=$(awk '$1 == "indexed" {printf "%.0f / %.0f", $3, $6}' <<<"$codec")
		c_bound[$k]=$(awk -v n="$cores" -v a="${c_codec_idx[$k]##* }" -v b="${road##* }" \
			'BEGIN {printf "%.0f", n / (1 / a + 1 / b)}')
		rss=0
		c_first[$k]=$(for _ in $(seq "$runs"); do
			rm -rf "$idx"
			start_fs a -o index_dir="$idx"
			cat "$inf/$k.npz" >/dev/null
			rates --pid "${pids[-1]}" dd if="$data" of=/dev/null bs=1M status=none
			hwm "${pids[-1]}" >"$work/hwm"
			stop_fs a
		done | best)
		rss=$(cat "$work/hwm")
		c_size[$k]=$(du -b "$idx"/*.afi | awk -v s="$size" '{t += $1} END {printf "%.2f %%", 100 * t / s}')
		c_idx[$k]=$(for _ in $(seq "$runs"); do
			start_fs a -o index_dir="$idx"
			cat "$inf/$k.npz" >/dev/null
			rates --pid "${pids[-1]}" dd if="$data" of=/dev/null bs=1M status=none
			r=$(hwm "${pids[-1]}"); [ "$r" -gt "$rss" ] && rss=$r
			stop_fs a
		done | best)
		start_fs a -o index_dir="$idx"
		cat "$inf/$k.npz" >/dev/null
		c_rand[$k]=$(rand_reads "$data" "$nrand" | awk '{printf "%s / %s", $1, $2}')
		r=$(hwm "${pids[-1]}"); [ "$r" -gt "$rss" ] && rss=$r
		stop_fs a
		c_rss[$k]=$rss
		c_igzip[$k]=$(for _ in $(seq "$runs"); do
			cat "$inf/$k.gz" >/dev/null
			rates igzip -d -c "$inf/$k.gz"
		done | best)
		c_unzip[$k]=$(for _ in $(seq "$runs"); do
			cat "$inf/$k.npz" >/dev/null
			rates unzip -p "$inf/$k.npz"
		done | best)
	done
	local two_idx two_none
	two_idx=$(for _ in $(seq "$runs"); do
		rm -rf "$work/index-two"
		start_fs a -o index_dir="$work/index-two"
		cat "$inf/two.npz" >/dev/null
		read_arrays "$work/mnt_a/inflate/two.npz" a b
		stop_fs a
	done | sort -n | head -1)
	two_none=$(for _ in $(seq "$runs"); do
		start_fs a -o no_index
		cat "$inf/two.npz" >/dev/null
		read_arrays "$work/mnt_a/inflate/two.npz" a b
		stop_fs a
	done | sort -n | head -1)
	rm -rf "$work/index-two"
	echo
	echo "deflated ${inf_mib} MiB members: MiB/s of output, wall / CPU (CPU: of the"
	echo "command, or of the arrayfs daemon), best of $runs; load now: $(cut -d' ' -f1-3 /proc/loadavg)"
	row "measure" "uint8 0..15" "float32 normal"
	row "codec, zlib (bench_inflate --pass)" "${c_zlib[u8]:--}" "${c_zlib[f32]:--}"
	row "codec, ISA-L (bench_inflate --pass)" "${c_isal[u8]:--}" "${c_isal[f32]:--}"
	row "data, first pass, fresh mount, dd bs=1M" "${c_first[u8]}" "${c_first[f32]}"
	row "igzip -d -c FILE.gz >/dev/null" "${c_igzip[u8]}" "${c_igzip[f32]}"
	row "unzip -p FILE.npz >/dev/null" "${c_unzip[u8]}" "${c_unzip[f32]}"
	row "  first pass / igzip -d (target >= 1.0x)" "$(ratio "${c_first[u8]}" "${c_igzip[u8]}")" "$(ratio "${c_first[f32]}" "${c_igzip[f32]}")"
	row "  first pass / unzip -p (target >= 3.5x)" "$(ratio "${c_first[u8]}" "${c_unzip[u8]}")" "$(ratio "${c_first[f32]}" "${c_unzip[f32]}")"
	row "data, saved index, fresh mount, dd bs=1M" "${c_idx[u8]}" "${c_idx[f32]}"
	row "  saved index / igzip -d (target >= 1.6x)" "$(ratio "${c_idx[u8]}" "${c_igzip[u8]}")" "$(ratio "${c_idx[f32]}" "${c_igzip[f32]}")"
	row "codec alone, saved index, $cores threads" "${c_codec_idx[u8]}" "${c_codec_idx[f32]}"
	row "  (bench_inflate --indexed) / igzip -d" "$(ratio "${c_codec_idx[u8]}" "${c_igzip[u8]}")" "$(ratio "${c_codec_idx[f32]}" "${c_igzip[f32]}")"
	row "FUSE road of decoded bytes: road.ra, dd bs=1M" "$road (daemon + dd)" ""
	row "most $cores cores reach through FUSE here:" "${c_bound[u8]}" "${c_bound[f32]}"
	row "  $cores / (codec CPU + road CPU), per MiB" "" ""
	row "  that / igzip -d" "$(ratio "${c_bound[u8]}" "${c_igzip[u8]}")" "$(ratio "${c_bound[f32]}" "${c_igzip[f32]}")"
	row "  saved index / that" "$(ratio "${c_idx[u8]}" "${c_bound[u8]}")" "$(ratio "${c_idx[f32]}" "${c_bound[f32]}")"
	row "random 4 KiB, saved index: median / max ms" "${c_rand[u8]}" "${c_rand[f32]}"
	row "  (targets 2 / 10 ms; $nrand reads)" "" ""
	row "index file / member size (target <= 2 %)" "${c_size[u8]}" "${c_size[f32]}"
	row "daemon peak RSS, MiB (target <= 64)" "${c_rss[u8]}" "${c_rss[f32]}"
	row "two.npz (float32, uint8; $((inf_mib / 2)) MiB each), array after array, fresh mount (s)" "$two_idx" "$two_none (-o no_index)"
	row "  saving indexes / -o no_index (1.00x: the export waits)" "$(ratio "$two_none" "$two_idx")" "-"
}

# read_arrays NPZ_DIR NAME...: seconds to read each NAME.npy/data whole,
# one after the other (os.read of 1 MiB, as numpy.load's readinto)
read_arrays() {
	"$py" - "$@" <<'EOF'
import os, sys, time
d, names = sys.argv[1], sys.argv[2:]
t = time.monotonic()
for n in names:
    fd = os.open(os.path.join(d, n + ".npy", "data"), os.O_RDONLY)
    try:
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)
print("%.3f" % (time.monotonic() - t))
EOF
}

# dd_rate MIB FILE [DD ARGS]: MiB/s of dd bs=1M reading FILE (MIB MiB) to /dev/null
dd_rate() {
	"$py" - "$@" <<'EOF'
import subprocess, sys, time
t = time.monotonic()
subprocess.run(["dd", "if=" + sys.argv[2], "of=/dev/null", "bs=1M", "status=none"]
               + sys.argv[3:], check=True)
print("%.0f" % (int(sys.argv[1]) / (time.monotonic() - t)))
EOF
}

lz4_section() {
	echo "compressed: LZ4 .ra ..." >&2
	local lz_mib=${BENCH_LZ4_MIB:-1536} lz=$work/src/lz4 safe seq rnd view rss r ceil
	local nrand=${BENCH_RANDOM_READS:-200}
	mkdir -p "$lz"
	"$root/$builddir/tests/bench/bench_lz4" --write "$lz_mib" smooth "$lz/n.ra"
	safe=$("$root/$builddir/tests/bench/bench_lz4" --safe "$lz/n.ra" "$runs")
	view=$("$root/$builddir/tests/bench/bench_lz4" --view "$lz/n.ra" "$runs")
	start_fs a
	cat "$lz/n.ra" >/dev/null
	rnd=$(rand_reads "$work/mnt_a/lz4/n.ra/data" "$nrand")
	rss=$(hwm "${pids[-1]}")
	stop_fs a
	seq=$(for _ in $(seq "$runs"); do
		start_fs a
		cat "$lz/n.ra" >/dev/null
		dd_rate "$lz_mib" "$work/mnt_a/lz4/n.ra/data"
		r=$(hwm "${pids[-1]}"); [ "$r" -gt "$rss" ] && rss=$r
		stop_fs a
	done | sort -n | tail -1)
	# the same road without LZ4: B.ra of a big-endian .npy is byte-swapped
	# in memory (about memcpy's cost) and goes to the kernel as an LZ4
	# view's bytes do (one writev per read): the most a decoder of any
	# speed could reach through FUSE on this machine
	"$py" -c "import numpy as np, sys; np.save(sys.argv[1], np.arange(int(sys.argv[2]) << 17, dtype='>f8'))" \
		"$lz/be.npy" "$lz_mib"
	ceil=$(for _ in $(seq "$runs"); do
		start_fs a
		cat "$lz/be.npy" >/dev/null
		dd_rate "$lz_mib" "$work/mnt_a/lz4/be.npy/be.ra"
		stop_fs a
	done | sort -n | tail -1)
	rm -f "$lz/be.npy"
	# reads sent at once: throughput, and decoded bytes over the size
	local dlog=$work/lz4_direct.log direct decoded
	direct=$(for _ in $(seq "$runs"); do
		alog=$dlog start_fs a -d
		cat "$lz/n.ra" >/dev/null
		dd_rate "$lz_mib" "$work/mnt_a/lz4/n.ra/data" iflag=direct bs=16M
		stop_fs a
	done | sort -n | tail -1)
	decoded=$(grep -o 'LZ4 index closed: [0-9]* bytes decoded of [0-9]*' "$dlog" |
		  awk '{r = $4 / $8; if (r > m) m = r} END {printf "%.2fx", m}')
	rm -f "$dlog"
	echo
	echo "LZ4 .ra of ${lz_mib} MiB, float64 sine, 2 decimals (short sequences); load now: $(cut -d' ' -f1-3 /proc/loadavg)"
	row "measure" "arrayfs" "reference"
	row "random 4 KiB, fresh mount: median / max ms" "$(awk '{printf "%s / %s", $1, $2}' <<<"$rnd")" "target median <= 5"
	row "  the first (walks the block up to it), ms" "$(awk '{print $3}' <<<"$rnd")" "-"
	row "data, fresh mount, dd bs=1M (MiB/s)" "$seq" "$safe (LZ4_decompress_safe, in memory)"
	row "  data / LZ4_decompress_safe (target >= 0.7x)" "$(ratio "$seq" "$safe")" "-"
	row "  the codec alone: the view, 512 KiB reads" "$(awk '{print $1}' <<<"$view")" "$(ratio "$view" "$safe") (bench_lz4 --view)"
	row "  no decoding: B.ra of a big-endian .npy, swapped in memory" "$ceil" "$(ratio "$ceil" "$safe") of LZ4_decompress_safe: the FUSE ceiling"
	row "data, O_DIRECT 16 MiB reads, fresh mount (MiB/s)" "$direct" "$(ratio "$direct" "$safe") of LZ4_decompress_safe"
	row "  bytes decoded / data size, most of the runs" "$decoded" "before ordering: 1.4-1.8x (uint8 noise)"
	row "daemon peak RSS, MiB (target < 128)" "$rss" "-"
}
