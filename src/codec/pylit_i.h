/* SPDX-License-Identifier: MIT */
/**
 * @file pylit_i.h
 * A small streaming lexer for the Python literals found in .npy headers:
 * strings, integers, True/False/None, brackets, commas and colons, with
 * comments and whitespace skipped. There is no AST: parsers look at the
 * current token (pl->tok), advance, and skip whole values they do not need.
 *
 * Invariants:
 *  - Every error is reported through pl->err with pl->syntax_status (or
 *    AF_E_LIMIT for nesting) and the offset base + position, so messages
 *    can say "at byte N" of the file.
 *  - Work and memory are linear in the input; nesting is bounded by
 *    PL_MAX_DEPTH.
 *  - A PL_STR token has been fully validated when lexed, so decoding it
 *    cannot fail, and the decoded text is never longer than its body.
 */
#ifndef ARRAYFS_PYLIT_I_H
#define ARRAYFS_PYLIT_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrayfs/af_dtype.h"
#include "arrayfs/af_status.h"

/* Deepest bracket nesting a value may have (structured dtypes need about
 * three levels per struct level, plus redundant parentheses). */
#define PL_MAX_DEPTH 256

typedef enum pl_kind {
	PL_EOF = 0,
	PL_STR,
	PL_INT,     /* non-negative integer literal; big if it exceeds u64 */
	PL_FLOAT,   /* any other number: 1.5, 1e3, 2j */
	PL_TRUE,
	PL_FALSE,
	PL_NONE,
	PL_PUNCT,   /* one of ( ) [ ] { } , : - + */
} pl_kind;

typedef struct pl_tok {
	pl_kind kind;
	char punct;
	bool big;
	bool escaped;            /* PL_STR: the body holds backslashes */
	uint64_t ival;
	size_t start, end;       /* the token's bytes */
	size_t body, body_end;   /* PL_STR: between the quotes */
} pl_tok;

typedef struct pylit {
	const char *buf;
	size_t len;
	size_t pos;              /* lexer position (after tok) */
	size_t prev_end;         /* end of the last token consumed */
	uint64_t base;           /* file offset of buf[0], for messages */
	bool allow_long;         /* accept Python-2 L/l integer suffixes */
	af_status syntax_status; /* returned for syntax errors */
	af_error *err;
	pl_tok tok;              /* the current token */
	size_t lookahead;        /* bytes rescanned by pl_unwrap, bounded */
	struct af_dtype_sink *sink; /* dtype.c: who watches the descr, or NULL */
} pylit;

/**
 * Start lexing @p buf (not copied: it must outlive @p pl; nothing to free)
 * and read the first token. This and every other af_status call below
 * return AF_OK, @p syntax_status for bad syntax, or AF_E_LIMIT.
 */
af_status pl_init(pylit *pl, const char *buf, size_t len, uint64_t base,
		  bool allow_long, af_status syntax_status, af_error *err);

/** Consume the current token and lex the next one. */
af_status pl_advance(pylit *pl);

/** True if the current token is the punctuation @p c. */
static inline bool pl_is(const pylit *pl, char c)
{
	return pl->tok.kind == PL_PUNCT && pl->tok.punct == c;
}

/** Require and consume the punctuation @p c; @p what names the place. */
af_status pl_expect(pylit *pl, char c, const char *what);

/** Skip one complete value (syntax-checked) starting at the current token. */
af_status pl_skip_value(pylit *pl);

/**
 * Strip redundant parentheses: while the current token opens a parenthesized
 * single value (not a tuple), consume the '(' and count it in *@p n. The
 * caller then parses the value and calls pl_close_parens(pl, *n).
 * Telling "(x)" from "(x, y)" needs a look ahead; the bytes it rescans are
 * capped at a small multiple of the input (AF_E_LIMIT beyond), so even
 * deeply parenthesized input stays linear.
 */
af_status pl_unwrap(pylit *pl, unsigned *n);
af_status pl_close_parens(pylit *pl, unsigned n);

/**
 * Decode the current PL_STR token into @p out (at least body length + 1
 * bytes) as UTF-8, NUL-terminated; returns the decoded length.
 */
size_t pl_str_decode(const pylit *pl, char *out);

/** Body length of the current PL_STR token (an upper bound on its value). */
static inline size_t pl_str_cap(const pylit *pl)
{
	return pl->tok.body_end - pl->tok.body;
}

/** Report a syntax error at the current token with a message. */
af_status pl_fail(pylit *pl, af_status st, const char *what);

/** Offset (in the file) of the current token. */
static inline uint64_t pl_off(const pylit *pl)
{
	return pl->base + pl->tok.start;
}

/**
 * af_dtype_parse for text that sits at file offset @p base, so that error
 * offsets and messages count bytes of the file (used by the .npy parser).
 */
af_status af_dtype_parse_at(const char *text, size_t len, uint64_t base,
			    bool allow_long_suffix, af_dtype *out,
			    af_error *err);

#endif /* ARRAYFS_PYLIT_I_H */
