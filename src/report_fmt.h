/* report_fmt.h - what results.c and the report's writers share to
 * label and print a result's figures (not a public interface: the rest of
 * the program reads report.h). */
#ifndef DDPTOP_REPORT_FMT_H
#define DDPTOP_REPORT_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

struct trace_rule;

/* results.c: a run's batch per
 * rank (a stage works on its replica's whole batch) */
int rep_per_rank_batch(const struct run_result *r);
/* the run of res[0..n) that measured what run i's --predict predicts for
 * k ranks (the same model, data, way of training and per-rank batch); -1
 * if none */
int rep_measured_for(const struct run_result *res, int n, int i, int k);

/* report_fmt.c */
const char *rep_threshold_str(char *buf, size_t n, const struct run_result *r);
const char *rep_strat_label(const struct run_result *r);
const char *rep_compress_name(const struct run_result *r);
const char *rep_prec_name(const struct run_result *r);
const char *rep_strat_name(const struct run_result *r);
const char *rep_or_na(const char *s);
/* fmt with v, or "n/a" when not valid */
const char *rep_fig(char *buf, size_t n, const char *fmt, double v, int valid);
/* a rate to three significant figures at least */
const char *rep_fig3(char *buf, size_t n, double v, int valid);
double rep_split_pct(int64_t part_ns, const struct breakdown *b);
const char *rep_window_label(const struct trace_rule *rule, int whole);
const char *rep_trace_state(const struct replay_source *src);
double rep_per_step(double total_ms, long steps);
const char *rep_vs_label(char *buf, size_t n, const struct run_result *r);

/* report_json.c */
int report_write_json(FILE *f, const struct run_result *res, int n);
/* report_csv.c */
void report_write_csv(FILE *f, const struct run_result *res, int n);
/* report_device.c: a replayed trace's device tables, in text (md 0) or
 * markdown */
void report_write_device_tables(FILE *f, const struct run_result *res, int n, int md);

#endif
