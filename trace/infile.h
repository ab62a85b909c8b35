/* infile.h - opening and reading input files: traces for --replay, data
 * sets, themes and the comm-model cache all come in through here.
 *
 * Only a regular file is read. Anything else (a FIFO, a device such as
 * /dev/zero, a directory, a socket) is refused before a byte of it is read,
 * with one line naming the file, so a reader never blocks on a pipe nor
 * reads an endless device until memory runs out. A cache (INFILE_OWNED) is
 * also refused when it is a symbolic link or another user owns it: a file
 * someone else planted is never trusted.
 *
 * gzip is recognised by its magic and inflated in memory (infile_gunzip),
 * every member of a multi-member file, as zlib's gzread would, up to a
 * cap: a few kilobytes of gzip can inflate to gigabytes (a "gzip bomb"),
 * so a file inflates to at most INFILE_GZ_RATIO times its size (past the
 * first INFILE_GZ_FREE_MB), and to at most INFILE_GZ_MAX_MB whatever its
 * size; DDPTOP_GZIP_MAX_RATIO and DDPTOP_GZIP_MAX_MB raise either (docs/
 * environment.md). Readers parse
 * the plain bytes, so a test or a fuzzer reaches from a buffer the very code
 * that ddptop runs on a file. Lengths are size_t throughout: files over
 * 2 GiB are read in pieces that zlib's and read's int-sized counts can hold.
 */
#ifndef DDPTOP_INFILE_H
#define DDPTOP_INFILE_H

#include <stddef.h>
#include <sys/stat.h>

/* flags */
#define INFILE_OWNED 1u /* refuse a symbolic link and a file this user does not own */

/* Opens path for reading if it is a regular file (and, with INFILE_OWNED,
 * not a link and this user's). Returns the descriptor, with the file's
 * status in *st when st is not NULL, or -1 with err: "PATH: what". */
int infile_open(const char *path, unsigned flags, struct stat *st, char *err, size_t errlen);

/* Reads the file at path whole, as infile_open opens it, into *buf
 * (malloc'd; *n bytes, then a NUL that *n does not count). max > 0 refuses
 * a file larger than max bytes. Returns 0, or -1 with err: "PATH: what". */
int infile_read(const char *path, unsigned flags, size_t max, char **buf, size_t *n, char *err, size_t errlen);

#define INFILE_GZ_RATIO 100   /* inflated bytes per gzip byte, at most (traces shrink 4x to 20x) */
#define INFILE_GZ_FREE_MB 64  /* ... once past this many MiB (a small file may shrink more) */
#define INFILE_GZ_MAX_MB 2048 /* and never past this many MiB */

enum infile_gz {
    INFILE_PLAIN = 0, /* not gzip: *out is NULL, the input is the data */
    INFILE_GZ_OK,     /* every member inflated */
    INFILE_GZ_CUT,    /* the input ends inside a member: *out holds what it decoded */
    INFILE_GZ_BAD,    /* corrupt data, or out of memory: *out holds what decoded before; why says what */
    INFILE_GZ_BIG     /* it inflates past the cap (or a cap variable is not a number): *out is NULL; why says so */
};

/* If in[0..n) starts with gzip's magic, inflates it into *out (malloc'd;
 * *outn bytes, then a NUL) and returns how that went; bytes after the last
 * member that are not gzip are ignored, as gzread ignores them. Inflating
 * stops at the cap (above): INFILE_GZ_BIG, with why naming the sizes and
 * the variables that raise it. */
enum infile_gz infile_gunzip(const char *in, size_t n, char **out, size_t *outn, char *why, size_t whylen);

#endif
