/* config_help.c - --help, written from the table's rows (config_opt.h):
 * each option's argument, text, what it accepts (its kind's words) and
 * its default, grouped and wrapped; and the models the zoo builds.
 */
#include "config_opt.h"

#include <string.h>

#include "zoo.h"

#define HELP_COL 28    /* --help: where an option's text starts */
#define HELP_WIDTH 100 /* --help: text is wrapped before this column */

static const char *const group_title[G_COUNT] = {
    [G_MODE] = "Modes (one at a time; without one: train, in the live curses UI when stdout is a terminal):",
    [G_WORK] = "Workload (a comma list makes a sweep: one run per combination):",
    [G_OPTIM] = "Optimiser (SGD):",
    [G_EXEC] = "Execution:",
    [G_REPORT] = "Report:",
    [G_UI] = "Interactive UI:",
    [G_TRACE] = "Traces (Chrome trace-event JSON: Perfetto, chrome://tracing, speedscope):",
    [G_BENCH] = "Collective benchmark (--bench-comm; --ranks, --comm, --algo and the report options apply too):",
    [G_HELP] = "Help:",
};

/* ---- --help ----------------------------------------------------------------- */

/* Writes text from column col, word-wrapped before column width, each
 * further line indented to column indent, and ends the line. */
static void wrap(FILE *out, int col, int indent, int width, const char *text)
{
    for (const char *w = text; *w;) {
        size_t len = strcspn(w, " ");
        if (col > indent && col + 1 + (int)len > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)len, w);
        col += (int)len;
        w += len;
        w += strspn(w, " ");
    }
    fputc('\n', out);
}

static void help_wrap(FILE *out, int col, const char *text)
{
    wrap(out, col, HELP_COL, HELP_WIDTH, text);
}

/* The zoo's models: each one's summary, and its size at the three shapes. */
static void help_models(FILE *out)
{
    enum { INDENT = 16, WIDTH = 78 };
    fprintf(out, "  (sizes: parameters, and forward FLOPs per image, with 10 classes; at 224x224 and more every model\n"
                 "  but mlp and lenet takes its ImageNet form, torchvision's, with 1000 classes unless --classes)\n");
    for (int i = 0; i < zoo_count; i++) {
        const struct zoo_entry *z = &zoo_models[i];
        fprintf(out, "  %-13s ", z->name);
        wrap(out, INDENT, INDENT, WIDTH, z->summary);
        fprintf(out, "%*s1x28x28: %.2fM params, %.3f GFLOP; 3x32x32: %.2fM, %.3f GFLOP\n", INDENT, "",
                (double)z->params[ZOO_28] / 1e6, (double)z->flops[ZOO_28] / 1e9, (double)z->params[ZOO_32] / 1e6,
                (double)z->flops[ZOO_32] / 1e9);
        fprintf(out, "%*s3x224x224, 1000 classes: %.2fM, %.2f GFLOP\n", INDENT, "", (double)z->params[ZOO_224] / 1e6,
                (double)z->flops[ZOO_224] / 1e9);
    }
}

/* "  --name ARG    help (what is allowed; default X)" */
static void help_row(FILE *out, const struct opt *o)
{
    char left[160], names[256], allowed[512], text[1024];
    int n = o->short_name ? snprintf(left, sizeof(left), "  -%c, --%s", o->short_name, o->name)
                          : snprintf(left, sizeof(left), "  --%s", o->name);
    int names_in_arg = is_choice(o) && !o->arg;
    if (names_in_arg) {
        choice_join(o, "|", names, sizeof(names));
        n += snprintf(left + n, sizeof(left) - (size_t)n, " %s", names);
    } else if (o->arg) {
        n += snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->arg);
        if (o->cap)
            n += snprintf(left + n, sizeof(left) - (size_t)n, "[,%s..]", o->arg);
    }

    /* what is allowed, unless the names stand in the argument; a path's
     * length limit would only clutter */
    allowed[0] = 0;
    if (o->kind->takes_arg && !names_in_arg && o->kind != &k_text && o->kind->describe)
        o->kind->describe(o, allowed, sizeof(allowed));
    char def[256] = "";
    if (o->def_text)
        snprintf(def, sizeof(def), "default: %s", o->def_text);
    else if (o->def)
        snprintf(def, sizeof(def), "default %s", o->def);
    if (allowed[0] || def[0])
        snprintf(text, sizeof(text), "%s (%s%s%s)", o->help, allowed, allowed[0] && def[0] ? "; " : "", def);
    else
        snprintf(text, sizeof(text), "%s", o->help);

    fputs(left, out);
    if (n >= HELP_COL - 1) {
        fputc('\n', out);
        n = 0;
    }
    fprintf(out, "%*s", HELP_COL - n, "");
    help_wrap(out, HELP_COL, text);
}

void config_usage(FILE *out, const struct opt *opts, size_t n)
{
    fprintf(out, "Usage: ddptop [OPTIONS]\n"
                 "A terminal profiler for data-parallel training: trains a model on N ranks and shows\n"
                 "where each rank's time goes (compute, communication, data, idle).\n");
    for (int g = 0; g < G_COUNT; g++) {
        fprintf(out, "\n%s\n", group_title[g]);
        for (size_t i = 0; i < n; i++)
            if (opts[i].group == g)
                help_row(out, &opts[i]);
    }
    fprintf(out, "\nModels:\n");
    help_models(out);
    fprintf(out, "\nExamples:\n"
                 "  ddptop --batch --model lenet --ranks 1,2 --strategy allreduce --epochs 1\n"
                 "  ddptop --batch --model mlp --ranks 2 --steps 200 --format json --output run.json\n"
                 "\nEnvironment (every DDPTOP_* variable, and the test hooks, in docs/environment.md):\n"
                 "  DDPTOP_GPU_MODULE  the GPU module to load    DDPTOP_THEME_DIR  a folder of themes\n"
                 "  DDPTOP_COMM_MODEL  the cost model's file     NO_COLOR          no colour\n");
}
