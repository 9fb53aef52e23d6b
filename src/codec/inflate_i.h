/* SPDX-License-Identifier: MIT */
/**
 * @file inflate_i.h
 * Private to the inflate module (inflate.c, inflate_cursor.c,
 * inflate_zlib.c, inflate_isal.c, inflate_cache.c): tuning options that
 * tests shrink, the shared state, and the two engines a cursor inflates with.
 *
 * Locking: z->lock guards the point list, the cache, the cursor table
 * fields marked "lock" and the sticky error. A cursor with busy set belongs
 * to the one thread that claimed it; that thread alone touches the fields
 * marked "owner", without the lock, so inflating never holds z->lock.
 * Point windows (as they are or deflated) are immutable once appended and
 * freed only at close, or, the pass's, when an export has replaced them
 * with the saved points (afz_use_saved), once no cursor is busy: so an
 * owner may use a point copied out under the lock after dropping it.
 */
#ifndef ARRAYFS_INFLATE_I_H
#define ARRAYFS_INFLATE_I_H

#include <pthread.h>
#include <stdbool.h>
#include <zlib.h>

#include "arrayfs/af_inflate.h"
#include "bytes_i.h"
#include "pool_i.h"
#include "read_order_i.h"

struct af_inflate_opts {
	af_inflate_engine engine; /* AUTO: ISA-L when built with it */
	uint64_t span;         /* output bytes between access points, >= 1 */
	uint64_t piece;        /* grid of the saved index's piece CRCs,
				* <= 1 GiB (inflate_index.c; 0: default) */
	unsigned cursors;      /* live inflate streams, >= 1 */
	size_t block;          /* cache block size, >= 1 */
	unsigned cache_blocks; /* cache capacity in blocks, 0 disables it */
	size_t inbuf;          /* compressed bytes asked per pread, >= 1 */
	unsigned index_div;    /* index bytes <= output reached / index_div,
				* 0: no limit (a point every span) */
	size_t seek_chunk;     /* ISA-L: compressed bytes per call while it
				* looks for a block boundary (0: default) */
	size_t scout_chunk;    /* ISA-L: the same for the scout that finds the
				* range first (0: default) */
	uint64_t seek_limit;   /* ISA-L: compressed bytes it may look through
				* for one before zlib takes over (0: default) */
	uint64_t save_span;    /* a saved index's points between the pass's:
				* one every this many output bytes
				* (inflate_refine.c; 0 or >= span: none) */
	uint64_t save_late;    /* closing: an export adds no points where
				* more output than this is left (0: default
				* AFZ_REFINE_AT_CLOSE) */
	uint64_t save_quiet_ns; /* with a pool, an export inflates again
				* only once no stream was read for this
				* long (0: default AFZ_SAVE_QUIET_NS) */
	uint64_t save_quiet_max_ns; /* ... but waits so no later than this
				* after the pass was checked (0: default
				* AFZ_SAVE_QUIET_MAX_NS) */
};

/** Fill @p o with the public defaults (AF_INFLATE_* constants). */
void af_inflate_default_opts(struct af_inflate_opts *o);

/**
 * af_inflate_open with explicit tuning; AF_E_INVAL if @p o is out of range,
 * AF_E_UNSUPPORTED if it asks for an engine this build lacks.
 */
af_status af_inflate_open_opts(af_inflate **out, const af_source *compressed,
			       uint64_t uncomp_size, uint32_t crc,
			       const struct af_inflate_opts *o, af_error *err);

/** Output offset of access point @p i (< af_inflate_points), for tests. */
uint64_t af_inflate_point_out(af_inflate *z, size_t i);

/** Bytes the points hold now (windows as stored + records), for tests. */
size_t af_inflate_index_memory(af_inflate *z);

/** Access point @p i (< af_inflate_points) keeps its window deflated. */
bool af_inflate_point_compressed(af_inflate *z, size_t i);

/** Upper bound of the memory an af_inflate holds besides its points. */
size_t af_inflate_fixed_memory(const struct af_inflate_opts *o);

/* Compressed bytes a cursor asks for per pread, at most: a cursor that
 * goes on reading grows its reads from AFZ_INBUF_FIRST to this, since each
 * isal_inflate call that runs out of input ends on its careful path and
 * saves its history (512 KiB instead of 128 KiB: +4 % on a first pass),
 * while a random read, which needs a few hundred KiB, reads no more. */
#define AFZ_INBUF (512u << 10)
#define AFZ_INBUF_FIRST (128u << 10)

/* The kernel's read-ahead sends its reads, of up to this many bytes, at
 * once, and the daemon's threads may serve them out of order: a read that
 * starts within this of a stream's next byte continues it
 * (inflate_ahead.c), and a cursor taken this far past bytes nobody read
 * yet keeps them all in the cache (afz_cursor_serve), for the read of
 * them that is surely under way. */
#define AFZ_NEAR (1u << 20)

/* Cache blocks a read that ends in whole blocks keeps of its own output
 * (an overlapping next read may want them): a quarter of the cache, 4 at
 * most, as before the cache grew to 24 (every read-ahead unit pays for
 * the copy); the others keep what a cursor went past to reach a read. */
#define AFZ_TAIL_BLOCKS(cache_blocks) \
	((cache_blocks) < 16 ? ((cache_blocks) + 3) / 4 : 4u)

_Static_assert((AF_INFLATE_CACHE_BLOCKS -
		AFZ_TAIL_BLOCKS(AF_INFLATE_CACHE_BLOCKS)) *
			       (uint64_t)AF_INFLATE_BLOCK >=
		       AFZ_NEAR + AF_INFLATE_BLOCK,
	       "the default cache keeps a whole read skipped out of order");

/* A cursor's scratch buffer, allocated when it first saves or restores a
 * window. */
#define AFZ_SCRATCH (2u * AF_INFLATE_WINDOW)

/* Pieces of a saved index: a CRC-32 every this many output bytes (on
 * multiples of it) besides the points. A cursor stops at the end of the
 * cache block holding a read's last byte anyway, so a finer grid saves no
 * inflating; it costs 4 bytes per 64 KiB (0.006 % of the output). */
#define AFZ_PIECE AF_INFLATE_BLOCK

/* Default index budget: 1/52 of the output = 1.92 %. */
#define AFZ_INDEX_DIV 52u

/* ISA-L cannot be told to stop at a block boundary; it stops where its
 * input ends, and when that is inside a block header it says so. So past a
 * due point a cursor hands it this few compressed bytes per call: headers
 * of dynamic blocks are longer, so most boundaries are caught. */
#define AFZ_SEEK_CHUNK 32u
/* Handing 32 bytes a call all the way from the mark to the next boundary
 * costs ~10 % of a pass on a uint8 0..15 member (its blocks are 25 KiB
 * compressed); so a copy of the state (a scout) first inflates on in calls
 * of this many bytes until its Huffman tables change, and only that last
 * call's stretch is then fed in seek chunks (~2 % of a pass, measured). */
#define AFZ_SCOUT_CHUNK 1024u

/* A uint64_t for printf's %llu. */
static inline unsigned long long ull(uint64_t v)
{
	return (unsigned long long)v;
}

struct afz_point {
	uint64_t in;           /* compressed offset of the first byte not used up */
	uint64_t out;          /* output offset */
	unsigned wlen;         /* window bytes: 32 KiB except near the start */
	unsigned zlen;         /* 0: window holds the wlen bytes as they are;
				* else it holds them raw-deflated in zlen < wlen
				* bytes */
	uint32_t crc_before;   /* CRC-32 of output [0, out), if has_crc */
	uint8_t bits;          /* bits of byte in - 1 still unused (0-7) */
	bool has_crc;          /* recorded on a pass from 0 */
	bool head;             /* starts a read-ahead unit (inflate_ahead.c):
				* a pass's point, or a loaded index's first
				* past a multiple of o.span */
	unsigned char *window; /* the wlen output bytes before out */
};

struct afz_engine;
struct inflate_state;

struct afz_cursor {
	/* lock */
	bool busy;          /* claimed by a reader */
	bool live;          /* positioned: usable for continuing */
	uint64_t pos;       /* output offset when idle (== out) */
	uint64_t claim_pos; /* while busy: where it started */
	uint64_t busy_end;  /* while busy: where it will stop */
	bool on_pass;       /* on the pass from 0 (its from_start, as known
			     * under the lock while the owner moves it) */
	uint64_t used;      /* LRU tick */
	/* owner */
	size_t vpiece;      /* piece whose CRC-32 is being checked, or
			     * AFZ_NO_PIECE (pieces: see inflate_index.c) */
	uint64_t vstart, vend; /* where that piece begins and ends */
	uint32_t vcrc;      /* CRC-32 of its output so far */
	uint64_t vfrom;     /* first byte the read being served wants */
	uint64_t bad_from, bad_to; /* output holding pieces that failed
			     * their check before vfrom (skipped, not
			     * cached); equal: none */
	const struct afz_engine *eng; /* what inflates now; NULL before use */
	z_stream zs;
	bool inited;        /* inflateInit2 done */
	struct inflate_state *isal; /* ISA-L's state, allocated on first use */
	bool refused;       /* ISA-L gave up on the last call: zlib takes over */
	uint64_t seek_fed;  /* compressed bytes handed while seeking */
	bool scouted;       /* ISA-L: the range of the next boundary is known */
	uint64_t seek_from; /* ISA-L: hand seek chunks from this compressed */
	uint64_t seek_to;   /* byte to this one, where the boundary lies */
	bool rescout;       /* ISA-L: the scout ran out of input first: the
			     * boundary lies past seek_from; scout again
			     * there, with the next input */
	bool from_start;    /* produced every byte since 0: crc is running */
	bool ended;         /* reached the end and saw the stream end there */
	bool crc_checked;   /* ended with a matching CRC-32 */
	bool fatal;         /* the last error condemns the whole member */
	bool eof;           /* the compressed source has no more bytes */
	uint64_t out;       /* output bytes produced */
	uint64_t in;        /* compressed offset just past inbuf's contents */
	const unsigned char *next_in; /* inbuf bytes the engine has not taken */
	size_t avail_in;
	size_t ask;         /* bytes the next pread asks for (<= o.inbuf) */
	struct afz_input_ahead *ahead; /* the next input, read by the pool */
	uint64_t next_mark; /* record a point at the first boundary past this */
	uint32_t crc;
	unsigned char *inbuf;
	unsigned char *blockbuf; /* one cache block; may be swapped into the cache */
	unsigned char *scratch;  /* AFZ_SCRATCH: a window and its deflated copy */
};

struct afz_cache_ent {
	bool valid;
	uint64_t blk;          /* block index: output offset / block */
	size_t piece;          /* served only once this piece of a loaded
				* index is checked (AFZ_NO_PIECE: always) */
	size_t len;            /* == block except for the last block */
	uint64_t used;
	unsigned char *data;
};

/* Read-ahead (inflate_ahead.c): a unit is a stretch of output decoded
 * whole into a buffer of its own, by a pool thread or by the reader that
 * needs it first: one span between two access points, or the next
 * o.span bytes of the pass from 0. */
enum afz_slot_state {
	AFZ_SLOT_EMPTY = 0,
	AFZ_SLOT_QUEUED,   /* its job waits in the pool's queue */
	AFZ_SLOT_RUNNING,  /* a thread inflates it: only that thread touches
			    * buf, st and err */
	AFZ_SLOT_READY,    /* buf holds [start, end) */
	AFZ_SLOT_FAILED,   /* st and err say why */
};

struct afz_slot {
	af_inflate *z;
	struct afp_job job;
	enum afz_slot_state state;
	uint64_t start, end;   /* output range */
	bool check;            /* crc is the CRC-32 the pass from 0 recorded */
	uint32_t crc;          /* for [start, end) */
	bool pass;             /* continues the pass from 0 */
	unsigned char *buf;    /* held bytes, from RUNNING on; kept while
				* EMPTY for the next unit (a buffer freed
				* and malloc'ed again for every unit cost
				* its pages' faults, 4 % of a read with a
				* saved index) */
	uint64_t held;         /* bytes reserved in the pool: >= end -
				* start unless EMPTY, buf's size if buf */
	unsigned pins;         /* readers copying out of it unlocked */
	uint64_t consumed;     /* bytes readers took out of it */
	uint64_t used;         /* LRU tick */
	af_status st;
	af_error err;
};

/* A reader's position, to tell sequential readers from random ones. */
struct afz_stream {
	uint64_t next;         /* the byte after its last read */
	unsigned hits;         /* reads that continued it */
	uint64_t used;
};

#define AFZ_STREAMS 4u
/* Units a decoder keeps at most, ahead of its readers and behind them. */
#define AFZ_SLOTS 8u

struct af_inflate {
	const af_source *src;
	uint64_t size;
	uint32_t crc;
	struct af_inflate_opts o;
	pthread_mutex_t lock;
	pthread_cond_t idle;   /* broadcast whenever a cursor is released */
	struct afo_gate order; /* long reads of a first pass, in order */
	struct afz_point *points; /* sorted by out, append-only */
	size_t npoints, cap;
	size_t index_bytes;    /* windows as stored + point records */
	struct afz_cursor *cursors;
	struct afz_cache_ent *cache;
	uint64_t tick;
	bool crc_ok;           /* one pass from 0 saw the end with a good CRC */
	af_inflate_engine engine; /* ZLIB or ISAL: what restarts use */
	bool isal_refused;     /* ISA-L gave up on this stream: zlib from now */
	bool loaded;           /* points came from a saved index: no more
				* are recorded, spans are checked */
	bool saved;            /* the index was exported once */
	size_t *piece_first;   /* loaded: first piece of span 0..npoints,
				* then the number of pieces */
	uint32_t *piece_crc;   /* loaded: CRC-32 of each piece */
	unsigned char *piece_ok; /* loaded: piece checked (atomic bytes) */
	uint32_t *grid;        /* grid[m - 1]: CRC-32 of output [0, m x
				* o.piece), recorded by passes from 0 */
	size_t ngrid, gridcap; /* lock */
	uint64_t inflated;     /* output bytes produced, atomic (a counter
				* for tests and the -d log) */
	uint64_t seek_steps;   /* ISA-L calls handed at most AFZ_SEEK_CHUNK
				* bytes to reach a boundary, atomic (a
				* counter for tests) */
	af_status sticky;      /* AF_OK, or the error every read now returns */
	af_error sticky_err;
	size_t mem;            /* bytes held; atomic (zlib allocates unlocked) */

	/* read-ahead, all under lock (inflate_ahead.c); pool NULL: none */
	af_pool *pool;
	struct afp_holder holder; /* the pool's hook to take buffers back */
	struct afz_slot *slots;   /* AFZ_SLOTS */
	unsigned jobs;            /* slots QUEUED or RUNNING */
	bool closing;
	struct afz_stream streams[AFZ_STREAMS];
	uint64_t units_pool;      /* units inflated by pool threads */
	uint64_t units_taken;     /* queued units a reader took back */
	uint64_t units_own;       /* units a reader inflated for itself */
	uint64_t units_chained;   /* pass units a pool thread went on with */
	uint64_t unit_buffers;    /* units' buffers malloc'ed; atomic (tests) */
	uint64_t inputs_ahead;    /* refills read ahead by the pool; atomic */
	bool input_ahead_held;    /* a cursor has the second input buffer
				   * (inflate_input.c); atomic */
	unsigned char *windows_file; /* loaded by afz_index_adopt: the
				   * file the windows lie in, freed at
				   * close (else each window is its own) */
	unsigned char **retired;  /* lock: windows of the pass's points the
				   * saved ones replaced (afz_use_saved),
				   * freed once no cursor is busy: one may
				   * be starting from a copy of such a point */
	size_t nretired, retired_bytes;
	bool hurry;               /* closing: an export adds few points;
				   * atomic (inflate_refine.c) */
	uint64_t export_waits;    /* atomic: times an export waited for
				   * streams to be quiet (tests) */
	uint64_t checked_ns;      /* atomic: when a pass from 0 first checked
				   * the CRC-32 (afp_now_ns), 0: not yet */
	af_pool *saver;           /* with no pool: where reads of AFZ_SEQ_MIN
				   * or more are noted as streams
				   * (af_inflate_set_saver); set before the
				   * first read */
};

void afz_mem_add(af_inflate *z, size_t n);
void afz_mem_sub(af_inflate *z, size_t n);

/**
 * Serve [off, off + len) (within the output) from the block cache and the
 * cursors, claiming one as needed: what af_inflate_read does without
 * read-ahead. Takes z->lock. Returns AF_OK or the read's failure.
 */
af_status afz_read_direct(af_inflate *z, unsigned char *buf, size_t len,
			  uint64_t off, af_error *err);

/**
 * afz_read_direct of [*at, end) with z->lock held (dropped while a cursor
 * inflates), @p p holding output byte @p off at p[0]; moves *at on as it
 * serves. Where it must wait for a busy cursor: with @p yield it returns
 * AF_OK with *at < end instead (a caller that waits on z->idle then may
 * find the bytes elsewhere: a unit another reader made meanwhile), else
 * it waits.
 */
af_status afz_direct_locked(af_inflate *z, unsigned char *p, uint64_t off,
			    uint64_t end, uint64_t *at, bool yield,
			    af_error *err);

/* inflate_ahead.c */

/** af_inflate_read for a stream with a pool: units ahead of sequential
 * readers, the rest through afz_read_direct. */
af_status afz_ahead_read(af_inflate *z, unsigned char *buf, size_t len,
			 uint64_t off, af_error *err);

/** Take back queued units, wait for running ones, free every buffer and
 * leave the pool (at close). */
void afz_ahead_stop(af_inflate *z);

/* crc32_combine64 keeping the operator of the last length it was asked
 * for: in a run of pieces of one size each combine is then one
 * multiplication, not a chain of log2(len) of them (a 128 MiB member has
 * 2048 pieces, combined when its index is loaded and, under its lock,
 * when it is exported). */
struct afz_crc_shift {
	bool set;
	uint64_t len;
	unsigned long op;
};

/** crc32_combine64(@p crc1, @p crc2, @p len2) through the operator @p s
 * keeps (start it zeroed). */
uint32_t afz_crc_combine(struct afz_crc_shift *s, uint32_t crc1, uint32_t crc2,
			 uint64_t len2);

/** CRC-32 of output [a, b) (@p len bytes) from the CRC-32 of [0, a) and of
 * [0, b); @p s as for afz_crc_combine, NULL for a one-off. */
uint32_t afz_span_crc(struct afz_crc_shift *s, uint32_t crc_a, uint32_t crc_b,
		      uint64_t len);

/** The last access point at or before @p off, or NULL. Lock held. */
const struct afz_point *afz_nearest_point(const af_inflate *z, uint64_t off);

/* inflate_cursor.c: all run by the cursor's owner, without z->lock. */

/**
 * Position @p c at @p p (NULL: the stream start) to inflate with @p engine
 * (ZLIB or ISAL). @p next_mark and @p from_start are decided by the caller
 * under the lock.
 */
af_status afz_cursor_start(af_inflate *z, struct afz_cursor *c,
			   const struct afz_point *p, af_inflate_engine engine,
			   uint64_t next_mark, bool from_start, af_error *err);

/**
 * Advance @p c (at c->out <= off) to cover [off, end) and copy that range
 * into @p buf (which holds byte off at buf[0]). Leaves c->out at the end of
 * the cache block holding end - 1. On failure c is no longer positioned.
 */
af_status afz_cursor_serve(af_inflate *z, struct afz_cursor *c,
			   unsigned char *buf, uint64_t off, uint64_t end,
			   af_error *err);

/**
 * Inflate exactly @p n more bytes (c->out + n <= z->size) into @p dst
 * with c's engine, zlib taking over where ISA-L gives up; a loaded
 * index's pieces are checked on the way.
 */
af_status afz_cursor_produce(af_inflate *z, struct afz_cursor *c,
			     unsigned char *dst, uint64_t n, af_error *err);

void afz_cursor_free(af_inflate *z, struct afz_cursor *c);

/*
 * What each engine does for a cursor. Both produce the same bytes and, for
 * bad streams, the same errors: ISA-L reports none of its own but sets
 * c->refused, and the cursor replays the stretch with zlib, whose verdict
 * stands.
 */
struct afz_engine {
	af_inflate_engine id;
	/* Make c's state ready to inflate from a block boundary. */
	af_status (*reset)(af_inflate *z, struct afz_cursor *c, af_error *err);
	/* Inflate the deflated window of @p p into c->scratch, leaving the
	 * state reset: AF_OK, AF_E_NOMEM, or AF_E_CORRUPT (no message). */
	af_status (*unzip_window)(af_inflate *z, struct afz_cursor *c,
				  const struct afz_point *p);
	/* Resume at a block boundary: the top @p bits bits of the byte before
	 * c->next_in are @p value, and @p dict holds the @p dlen output bytes
	 * before. False if the state will not take them. */
	bool (*resume)(struct afz_cursor *c, unsigned bits, unsigned value,
		       const unsigned char *dict, unsigned dlen);
	/* Inflate exactly n more bytes (c->out + n <= z->size) into dst,
	 * recording points past c->next_mark; at the declared end, insist the
	 * stream ends and check the CRC-32 of a pass from 0. */
	af_status (*produce)(af_inflate *z, struct afz_cursor *c,
			     unsigned char *dst, uint64_t n, af_error *err);
	/* Free c's engine state. */
	void (*release)(af_inflate *z, struct afz_cursor *c);
};

extern const struct afz_engine afz_engine_zlib;
#ifdef AF_HAVE_ISAL
extern const struct afz_engine afz_engine_isal;
#endif

/* Shared by the engines (inflate_cursor.c). */

/* A block boundary where another block follows: a place to restart. */
struct afz_boundary {
	uint64_t out;                /* output offset */
	uint64_t in;                 /* first compressed byte not used up */
	unsigned bits;               /* bits of byte in - 1 still unused */
	const unsigned char *window; /* the wlen output bytes before out */
	unsigned wlen;
	bool has_crc;                /* crc is known: a pass from 0 */
	uint32_t crc;                /* CRC-32 of output [0, out) */
};

/** Record a point at @p b (at or past c->next_mark) if the budget allows;
 * moves c->next_mark on. */
void afz_record_point(af_inflate *z, struct afz_cursor *c,
		      const struct afz_boundary *b);

/* inflate_input.c */

/** Read more compressed input into c->next_in/avail_in (one pread, or the
 * buffer a pool thread read ahead for the pass from 0); at the source's
 * end set c->eof instead of failing. */
af_status afz_refill(af_inflate *z, struct afz_cursor *c, af_error *err);
/** Free the input read ahead for @p c (it moves, or the stream closes),
 * waiting for a read under way. */
void afz_input_drop(af_inflate *z, struct afz_cursor *c);

/** The stream ended right at the declared size: check the CRC-32 of a pass
 * from 0 (a mismatch condemns the member). */
af_status afz_ended(af_inflate *z, struct afz_cursor *c, af_error *err);

/* The errors every engine reports alike. */
af_status afz_nomem(af_error *err, const char *what);
af_status afz_truncated(af_inflate *z, struct afz_cursor *c, af_error *err);
af_status afz_too_long(af_inflate *z, struct afz_cursor *c, uint64_t in,
		       af_error *err);
af_status afz_too_short(af_inflate *z, struct afz_cursor *c, uint64_t in,
			af_error *err);

af_status afz_ensure_buf(af_inflate *z, unsigned char **buf, size_t len,
			 af_error *err);

/* zlib allocations counted in z->mem (opaque: the af_inflate). */
voidpf afz_zalloc(voidpf opaque, uInt items, uInt size);
void afz_zfree(voidpf opaque, voidpf ptr);

/** CRC-32 (zlib's) of @p len bytes after @p crc: ISA-L's when built with
 * it (6x zlib's here), else zlib's. */
uint32_t afz_crc32(uint32_t crc, const unsigned char *p, size_t len);

/**
 * Raw-deflate the @p wlen window bytes at @p win at level 1 (ISA-L's when
 * built with it) into at most @p room bytes at @p out: their count, or 0
 * if they do not fit (or no memory for the deflate state).
 */
unsigned afz_deflate_window(af_inflate *z, const unsigned char *win,
			    unsigned wlen, unsigned char *out, size_t room);

#ifdef AF_HAVE_ISAL
/** Raw-deflate @p len bytes at @p in with ISA-L (level 1) into at most
 * @p room bytes at @p out: their count, or 0 if they do not fit. */
unsigned afz_isal_deflate(af_inflate *z, const unsigned char *in,
			  unsigned len, unsigned char *out, size_t room);
#endif

/** Bytes of an ISA-L state (0 without ISA-L), for the memory bound. */
size_t afz_isal_state_size(void);

/* inflate_index.c: checking pieces against a loaded index. A span is
 * the output between two access points: span 0 is [0, first point), span
 * k is [point k-1, point k), the last ends at the declared size. Spans are
 * cut into pieces at the multiples of o.piece inside them. */
#define AFZ_NO_PIECE SIZE_MAX

/** Feed the @p n bytes at @p dst just produced by @p c (ending at c->out)
 * to the piece check: AF_OK, or AF_E_CORRUPT when a piece's CRC-32
 * differs from the loaded index's. No-op unless an index was loaded. */
af_status afz_verify(af_inflate *z, struct afz_cursor *c,
		     const unsigned char *dst, uint64_t n, af_error *err);

/** A deflated window (@p zlen bytes at @p src) inflates with zlib, which
 * refuses what ISA-L might let through, to exactly @p wlen bytes, into
 * @p out (room for wlen + 1). */
bool afz_window_inflates(af_inflate *z, const unsigned char *src,
			 unsigned zlen, unsigned wlen, unsigned char *out);

/**
 * af_inflate_index_import of @p buf (malloc'ed), which @p z keeps on
 * AF_OK (its windows stay in it) and the caller frees otherwise.
 */
af_status afz_index_adopt(af_inflate *z, const af_index_key *key,
			  unsigned char *buf, size_t len, af_error *err);

/* inflate_refine.c: the points an index file holds. */

/* Points of a saved index, in output order, each with its CRC-32 before
 * and its window as the file stores it. */
struct afz_saved {
	struct afz_point *pts;
	bool *own;             /* [i]: pts[i].window is this list's to free;
				* else it is the stream's own point's */
	size_t n, cap;
	size_t base;           /* the stream's points it was made from */
};

/* What a point costs the file besides its window: its record and the
 * piece CRC its span boundary adds. */
#define AFZ_SAVED_RECORD (28u + 4u)

/* A closing member's export still adds points while at most this much
 * output is left to inflate again (about 0.5 s of CPU): the daemon closes
 * an evicted member on the thread of the request that evicted it. */
#define AFZ_REFINE_AT_CLOSE (256ull << 20)

/* A read near a stream's next byte but not right at it continues a
 * stream that is not sequential yet only if it is at least this long, as
 * the kernel's read-ahead reads are: random 4 KiB reads (no read-ahead)
 * that happened to land near each other made a reader sequential, and
 * its next read waited for a whole unit to be inflated (9-13 ms on
 * float32 data). A sequential stream takes any read near it: the kernel
 * splits a read-ahead window into requests, and a short last one that
 * arrives first must not go to the cursors (which inflated its span
 * again from its point, then the unit did). Without a pool, a read this
 * long is what counts as a stream's on the saver (af_inflate_set_saver).
 */
#define AFZ_SEQ_MIN AFO_LONG

/*
 * A read of [off, off + len) starts: during a first pass (the member's
 * points do not cover it yet: no checked pass, no loaded index) it goes
 * through z->order (read_order_i.h). Returns what afz_order_leave takes
 * when it ends.
 */
size_t afz_order_enter(af_inflate *z, uint64_t off, size_t len);
void afz_order_leave(af_inflate *z, size_t flight);

/* An export inflates again only once no stream on its pool was read for
 * this long: a sequential reader asks every millisecond or so, and numpy
 * loading an .npz reads the next array at once. */
#define AFZ_SAVE_QUIET_NS (50ull * 1000 * 1000)

/* An export waits for quiet no later than this after its pass was
 * checked: a reader streaming member after member for longer (an epoch
 * of training data) would otherwise leave every export to be done at
 * close, on the thread of the request that evicts the member, or at
 * unmount. */
#define AFZ_SAVE_QUIET_MAX_NS (10ull * 1000 * 1000 * 1000)

/* How long an export waiting for quiet sleeps between looks (a close's
 * hurry is seen within it). */
#define AFZ_SAVE_QUIET_POLL_NS (5ull * 1000 * 1000)

/**
 * The points an index file of @p z holds: the pass's, their windows made
 * sparse, and with o.save_span more between them, inflated again without
 * z's lock, within the budget. Returns AF_OK or AF_E_NOMEM.
 */
af_status afz_saved_points(af_inflate *z, struct afz_saved *s, af_error *err);

void afz_saved_free(struct afz_saved *s);

/**
 * Let @p z read from the saved points @p sv from now on too (a pass's
 * stream, lock held): its own points' windows that @p sv does not keep
 * are retired, and @p sv gives its windows to z. No-op for a loaded
 * index, or when z has points @p sv was not made from.
 */
void afz_use_saved(af_inflate *z, struct afz_saved *sv);

/** Free the retired windows if no cursor is busy (lock held); with
 * @p all (closing), whatever the cursors. */
void afz_retired_free(af_inflate *z, bool all);

/* inflate_sparse.c */

/**
 * Point @p p's window as a saved index stores it: the bytes a decoder
 * resuming at p can reach kept, the others zeroed, deflated into a new
 * buffer of *zlen bytes, fewer than p stores. NULL when that is not
 * smaller or anything fails (the window is then saved as it is). Reads
 * the compressed stream after p; takes no lock.
 */
unsigned char *afz_sparse_window(af_inflate *z, const struct afz_point *p,
				 unsigned *zlen);

/** Where span @p k begins. */
uint64_t afz_span_start(const af_inflate *z, size_t k);

/**
 * The CRC-32 of output [0, @p from + n) from @p crc, that of [0, from),
 * and the @p n bytes at @p dst: the one running CRC-32 of a pass from 0.
 * Unless an index was loaded, it also records the CRC-32 at each multiple
 * of o.piece inside, for a saved index's pieces (taking the lock): those
 * cost no second pass over the bytes.
 */
uint32_t afz_crc_advance(af_inflate *z, uint32_t crc, uint64_t from,
			 const unsigned char *dst, size_t n);

/* inflate_cache.c: lookup needs z->lock held; publish takes it. */

/** Copy bytes at @p off from a cached block into @p buf; 0 on a miss. */
size_t afz_cache_get(af_inflate *z, unsigned char *buf, size_t len,
		     uint64_t off);

/**
 * Hand c->blockbuf, holding block @p blk (@p len bytes), to the cache; c
 * gets the evicted buffer back, or NULL (allocate on next use). It is
 * served only once piece @p piece (of a loaded index) passed its check:
 * no reader takes bytes of a piece that may fail it. AFZ_NO_PIECE: at once.
 */
void afz_cache_put(af_inflate *z, struct afz_cursor *c, uint64_t blk,
		   size_t len, size_t piece);

/** Forget cached blocks overlapping [@p from, @p to): a piece that failed
 * its check. Takes the lock. */
void afz_cache_drop(af_inflate *z, uint64_t from, uint64_t to);

void afz_cache_free(af_inflate *z);

#endif /* ARRAYFS_INFLATE_I_H */
