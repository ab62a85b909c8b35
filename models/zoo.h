/* zoo.h - the model zoo: every model ddptop can train, in one registry. */
#ifndef DDPTOP_ZOO_H
#define DDPTOP_ZOO_H

struct model;

struct zoo_entry {
    const char *name;
    const char *summary; /* one line for --help: the definition and any adaptation */
    /* Adds the model's layers after input tensor `in`; returns the logits tensor. */
    int (*build)(struct model *m, int in, int classes);
};

extern const struct zoo_entry zoo_models[];
extern const int zoo_count;
const struct zoo_entry *zoo_find(const char *name);

#endif
