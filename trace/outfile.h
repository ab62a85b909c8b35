/* outfile.h - writing output files (reports, traces, --history,
 * --save-params), and the check that no output is an input or another
 * output.
 *
 * Writing. An output is written to a new file in its own folder (created
 * with O_EXCL and O_NOFOLLOW, mode 0666 less the umask, or the permissions
 * of the file it replaces) and renamed into place. So nothing is ever
 * written through a symbolic link (a link at the output's name is replaced,
 * its target left alone), and a file written whole (a report, the
 * parameters) replaces the old one only once it is complete: a failed
 * write leaves the old file as it was. A streamed file (a trace, the
 * history) is renamed into place as soon as it is opened, so that what a
 * killed process wrote is found at its name. A name that holds something
 * other than a regular file or a link (a terminal, a pipe, /dev/null, or
 * a link to one of those that this user or root made, such as /dev/stdout)
 * is written in place: there is no file there to replace.
 *
 * Identity. Two paths name one file when they resolve to the same file
 * (st_dev and st_ino, so hard links and symbolic links count), or when
 * they name the same entry of the same folder (the file need not exist
 * yet). outfile_clash finds the first output that is one file with an
 * input or with another output.
 */
#ifndef DDPTOP_OUTFILE_H
#define DDPTOP_OUTFILE_H

#include <stddef.h>

#define OUTFILE_PATH 4096

struct outfile {
    int fd;                  /* where to write; -1 once closed */
    int in_place;            /* written at its name (not a regular file there): nothing to rename */
    int published;           /* the temporary has its final name already */
    char path[OUTFILE_PATH]; /* the name asked for */
    char tmp[OUTFILE_PATH];  /* the temporary's name, "" when in place */
};

/* Opens a new file for path (above). 0, or -1 with err "PATH: what". */
int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen);
/* Gives the file its name now (a streamed file); writing goes on. 0, or
 * -1 with err. */
int outfile_publish(struct outfile *o, char *err, size_t errlen);
/* Closes the file and, unless it was published, renames it into place.
 * 0, or -1 with err; on failure the temporary is removed and what was at
 * the name stays. */
int outfile_close(struct outfile *o, char *err, size_t errlen);
/* Closes and removes the temporary (unless published): the name keeps
 * what it had. */
void outfile_discard(struct outfile *o);
/* Writes n bytes to path whole (open, write, close). 0, or -1 with err. */
int outfile_write(const char *path, const void *buf, size_t n, char *err, size_t errlen);
/* Whether path could be written later, without making anything now: 0, or
 * the errno that says why not (a folder that cannot be written, a name
 * that is a folder). */
int outfile_writable(const char *path);

/* One file a command reads or writes; or, with names set, a folder whose
 * files are read when names() takes their name, those there now and those
 * that land there later (--follow's, a --replay folder's). */
struct outfile_role {
    const char *path;
    const char *what; /* how the user named it ("--output", "--replay", ...) */
    int output;       /* written (else only read) */
    int (*names)(const char *name);
};
/* Whether any output among r[0..n) is one file with another entry (input
 * or output), or would land in a folder entry under a name it reads: 1
 * with *a the output and *b the other, else 0. An entry that repeats an
 * earlier one exactly (same path, same what and kind) is not a clash with
 * it. */
int outfile_clash(const struct outfile_role *r, size_t n, size_t *a, size_t *b);

#endif
