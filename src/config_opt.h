/* config_opt.h - what config.c's table of options is made of (not a
 * public interface: the program reads config.h). A row (struct opt) is
 * one option; its kind (struct opt_kind, config_kinds.c) reads and
 * describes its values; config_help.c writes --help from the rows.
 */
#ifndef DDPTOP_CONFIG_OPT_H
#define DDPTOP_CONFIG_OPT_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"

#define MAX_RANKS CFG_MAX_RANKS

struct opt;

/* How one kind of value is read and described. parse reads arg into dst (the
 * option's field, or one entry of a list) and returns 0, or -1 when arg is
 * not allowed. describe writes what parse accepts, in words that read after
 * "expected" (NULL: a kind that is not described in --help, whose why
 * words every refusal). A kind that takes no argument has no describe,
 * and parse cannot fail. */
struct opt_kind {
    int takes_arg;
    int (*parse)(const struct opt *o, struct config *cfg, void *dst, const char *arg);
    void (*describe)(const struct opt *o, char *buf, size_t len);
    /* where the words for a refusal depend on the value: why arg is
     * refused, the words before " (got ...)"; NULL: "expected " and
     * describe's words */
    const char *(*why)(const struct opt *o, const char *arg, char *buf, size_t len);
};

enum opt_group { G_MODE, G_WORK, G_OPTIM, G_EXEC, G_REPORT, G_UI, G_TRACE, G_BENCH, G_HELP, G_COUNT };

enum {
    F_DISTINCT = 1 << 0, /* list: no entry twice */
    F_DIGITS = 1 << 1,   /* integer: digits only, no sign or blanks */
    F_BARE = 1 << 2,     /* text: no '/' */
    F_DASH = 1 << 3,     /* names: a '-' may stand for a '_' */
    F_ONCE = 1 << 4,     /* a file written: given twice, one of the two would be lost */
    F_FIRST = 1 << 5,    /* read before the rest: it says which process speaks (config_parse) */
};

/* The modes that read an option (a row's .reads). */
enum {
    R_TRAIN = 1 << 0,
    R_INFO = 1 << 1,
    R_REPLAY = 1 << 2,
    R_FOLLOW = 1 << 3,
    R_BENCH = 1 << 4,
    R_ALL = (1 << 5) - 1,
    R_SHOWN = R_TRAIN | R_REPLAY | R_FOLLOW,            /* a report or the UI of runs */
    R_REPORT = R_TRAIN | R_REPLAY | R_FOLLOW | R_BENCH, /* a report written */
};

/* One option. Fields a kind does not use stay zero. */
struct opt {
    const char *name; /* --name */
    char short_name;  /* -h, or 0 */
    const struct opt_kind *kind;
    size_t off, size; /* the field in struct config, or a list's first entry and the size of one */
    int cap;          /* a comma list of up to cap entries; 0: one value */
    size_t n_off;     /* a list's entry count (an int) */
    /* integers: bounds, inclusive; a flag stores lo when given (its field
     * starts as !lo); choices: the values, named by names[] or name_of() */
    long long lo, hi;
    double min, max;          /* numbers: bounds, inclusive */
    const char *const *names; /* choices: names indexed by value, NULL-terminated */
    const char *(*name_of)(int value);
    const char *what;     /* noun of the value: "unknown <what>", "expected a <what>" */
    const char *arg;      /* --help: the argument ("N" shows as "N[,N..]" for a list); NULL: a choice's names */
    const char *def;      /* default, as typed on the command line; NULL: zero, or set in set_defaults */
    const char *def_text; /* --help: the default in words, where no value spells it */
    int group;            /* enum opt_group */
    const char *help;
    unsigned flags; /* F_* */
    /* given on the command line, the option also stores `also` (nonzero) at also_off */
    size_t also_off;
    int also;
    unsigned reads; /* R_*: the modes that read it (every row names one) */
    /* where a mode reads it only in some runs: NULL when a run of cfg
     * does, else why not, the words after "--name: " (in buf, or static) */
    const char *(*unused)(const struct config *cfg, char *buf, size_t len);
};

/* config_kinds.c: the kinds of value */
extern const struct opt_kind k_flag, k_int, k_u64, k_real, k_bytes, k_text, k_choice, k_name, k_bits, k_slow_rank,
    k_input, k_steps, k_trainable, k_fault, k_baseline, k_link, k_rendezvous;
/* answered by config_parse itself */
extern const struct opt_kind k_help, k_version;
/* Choices (k_choice, k_name) refuse a value as "unknown <what>". */
int is_choice(const struct opt *o);
/* a choice's names, joined by sep */
void choice_join(const struct opt *o, const char *sep, char *buf, size_t len);
/* Splits a comma list into 1 to CFG_MAX_LIST items of 1 to CFG_NAME-1 characters. */
int split_list(const char *s, char (*items)[CFG_NAME], int *n);

/* config_help.c: --help, from the n rows of opts */
void config_usage(FILE *out, const struct opt *opts, size_t n);

#endif
