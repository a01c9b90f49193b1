/* SPDX-License-Identifier: MIT */
/* cmd_sweep - `migbed sweep [SCENARIO] [--key VALUE ...] --chunk-sizes LIST ...`: one
 * `migbed run` per point of a cross product of run keys (chunk size, pin-all, guest,
 * downtime-limit, max-bandwidth, link rate), the seed question's table ("are 64 MiB chunks
 * the right default?"). The points and runs are run/sweep.h's; this file parses the command
 * line, turns a point into a run's config (the run's own parser: the point's values as
 * `--key VALUE` options after the others) and prints the typed rows: a table on stdout,
 * progress on stderr when it is a terminal, --json FILE, --csv FILE|-, --plot FILE.svg|png
 * (gnuplot). Every output file is refused before the first run when it cannot be written,
 * and written whole or not at all. Exit 0 every row met the run's expectation (completed,
 * unless --expect says otherwise), 1 some row did not (it is a row: failed:CAUSE), 2 bad
 * usage or input. Deterministic: on the model the same sweep writes the same files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/gnuplot.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "run/out_file.h"
#include "run/sweep.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "sim/size.h"
#include "vocab/cause.h"
#include "vocab/vocab.h"


struct sweep_cli {
	char **run_argv;                /* "run", the options passed on to every run */
	int run_argc;
	const char *backend;            /* "model" / "verbs" (for the JSON) */
	char **point_argv;              /* run_argv, then the point's --key VALUE pairs */
	bool quiet;                     /* --quiet: no progress line */
	struct progress progress;
	char plot_title[160];           /* the picture's title: which costs the model used */
};

/* sweep's own keys (rows of the option table, cli/runcfg.h), parsed once per process. */
static struct opts_extra sweep_opts;

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed sweep [SCENARIO] [--key VALUE ...] [--chunk-sizes LIST] [--pin-all LIST]\n"
		   "                    [--guest LIST] [--downtime-limit-ms LIST] [--max-bandwidth LIST]\n"
		   "                    [--link-gbps LIST] [--json FILE] [--csv FILE|-] [--plot FILE.svg|FILE.png]\n"
		   "                    [--shard K/N]\n\n"
		   "Run one migration per point of the cross product of the lists (comma-separated, each\n"
		   "value checked as `migbed run` checks that key), in a fixed order: guest outermost,\n"
		   "then pin-all, link-gbps, max-bandwidth, downtime-limit-ms, chunk-size fastest. Every\n"
		   "other key applies to every run. A failed migration is a row (failed:CAUSE), not an\n"
		   "abort. --shard K/N runs the points i with i %% N == K-1; rows keep their index.\n\n"
		   "Its own keys, then those of `migbed run`, passed to every run:\n\n");
	opts_print_help(f, OPTS_SWEEP);
	fprintf(f, "\nTable: point, the swept keys, chunk size (src/dst when they differ), total, downtime\n"
		   "and setup time (ms), Mbps (transferred*8 / (total - setup), as QEMU), transferred GiB,\n"
		   "registrations src/dst, COMPRESS messages, pinned peak src/dst, outcome.\n"
		   "exit status: 0 every row met the run's expectation (completed), 1 some row did not,\n"
		   "2 bad usage or input (nothing run, nothing written), or gnuplot failed (nothing written).\n");
}

/* ---- options ------------------------------------------------------------------------------ */

static bool argv_has(int argc, char **argv, const char *opt)
{
	size_t n = strlen(opt);
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], opt, n) && (argv[i][n] == '\0' || argv[i][n] == '='))
			return true;
	return false;
}

/* A run's key whose file one run writes (every row would overwrite it): refused. */
static int one_runs_output(const struct runcfg *c)
{
	const char *k = c->events_path[0] ? "events" : c->fault_counts_path[0] ? "fault-counts"
		      : c->pause_nth ? "pause-at" : c->bundle_path[0] ? "bundle" : c->json_path[0] ? "json" : NULL;
	if (k)
		return cli_usage_error("sweep: --%s is one run's output: every row would overwrite it "
				       "(the sweep writes --json, --csv and --plot)", k);
	return 0;
}

static int point_config(void *arg, const size_t idx[SWEEP_AXES], struct runcfg *c, struct diag *d);

/* Whether any key is swept (given as a list). */
static bool sweep_any(const struct sweep_values ax[SWEEP_AXES])
{
	for (int a = 0; a < SWEEP_AXES; a++)
		if (ax[a].n)
			return true;
	return false;
}

/* sweep's own keys out of argv, the rest (run options) into s->run_argv, those validated by
 * run's own parser. 1: help printed; 0 ok; 2 bad (the message printed). */
static int parse_args(struct sweep_cli *s, int argc, char **argv)
{
	struct opts_extra *x = &sweep_opts;
	struct diag d = { 0 };
	s->run_argv = calloc((size_t)argc + 1, sizeof *s->run_argv);
	s->point_argv = calloc((size_t)argc + SWEEP_AXES + 2, sizeof *s->point_argv);
	struct runcfg *c = calloc(1, sizeof *c);
	if (!s->run_argv || !s->point_argv || !c) {
		free(c);
		return cli_usage_error("sweep: out of memory");
	}
	opts_extra_defaults(x);
	s->run_argv[s->run_argc++] = "run";
	for (int i = 1; i < argc; i++)
		s->run_argv[s->run_argc++] = argv[i];
	int rc = opts_take_extra(OPTS_SWEEP, x, &s->run_argc, s->run_argv, &d) ? -1 : 0;
	if (rc)
		cli_usage_error("sweep: %s", d.msg);
	if (rc == 0) {
		runcfg_defaults(c);
		rc = run_parse_args(c, &d, s->run_argc, s->run_argv, usage);
		/* refused with the run's own guest but swept keys given: the generator's keys may be
		 * meant for the swept guests (`--guest 4G,8G --vm-bytes 1G`): checked again with the
		 * first point's values; every point is checked, and named, before the first run */
		if (rc < 0 && sweep_any(x->sweep)) {
			struct diag d2 = { 0 };
			size_t idx0[SWEEP_AXES] = { 0 };
			if (point_config(s, idx0, c, &d2) == 0) {
				rc = 0;
			} else {   /* refused there too: as the point (as every point is named) */
				char pt[256];
				sweep_point_text(x->sweep, idx0, pt, sizeof pt);
				int k = snprintf(d.msg, sizeof d.msg, "point 0 (%s): ", pt);
				if (k > 0 && (size_t)k < sizeof d.msg)
					memcpy(d.msg + k, d2.msg, strnlen(d2.msg, sizeof d.msg - (size_t)k - 1) + 1),
					d.msg[sizeof d.msg - 1] = 0;
			}
		}
		if (rc < 0)
			cli_usage_error("sweep: %s", d.msg);
	}
	if (rc == 0 && x->sweep[SWEEP_CHUNK].n && argv_has(s->run_argc, s->run_argv, "--chunk-size"))
		rc = -1, cli_usage_error("sweep: --chunk-size and --chunk-sizes: give one");
	if (rc == 0 && one_runs_output(c))
		rc = -1;
	if (rc == 0 && x->plot[0] && gnuplot_check("sweep", x->plot))
		rc = -1;
	s->backend = c->backend == HCA_BACKEND_VERBS ? "verbs" : "model";
	s->quiet = c->quiet;
	if (c->hw[0] || c->n_hw_set)   /* a profile's costs (docs/model.md); its name, shortened */
		snprintf(s->plot_title, sizeof s->plot_title, "model, hardware profile %.60s%s", c->hw[0] ? c->hw : "-",
			 c->n_hw_set ? " with --hw-set" : "");
	else
		snprintf(s->plot_title, sizeof s->plot_title, "model, built-in costs: not calibrated, see --hw");
	free(c);
	return rc < 0 ? 2 : rc > 0 ? 1 : 0;
}

/* A point's config: the run options, then the point's values as `--key VALUE`, parsed as
 * `migbed run` parses them (the options override the scenario; derived defaults follow). */
static int point_config(void *arg, const size_t idx[SWEEP_AXES], struct runcfg *c, struct diag *d)
{
	struct sweep_cli *s = arg;
	static char opts[SWEEP_AXES][48 + SWEEP_VALUE_MAX];   /* --key=VALUE (a flag takes one so) */
	int n = 0;
	for (int i = 0; i < s->run_argc; i++)
		s->point_argv[n++] = s->run_argv[i];
	for (int a = 0; a < SWEEP_AXES; a++) {
		const struct sweep_values *v = &sweep_opts.sweep[a];
		if (!v->n)
			continue;
		snprintf(opts[a], sizeof opts[a], "--%s=%s", sweep_axis_key((enum sweep_axis)a), v->v[idx[a]]);
		s->point_argv[n++] = opts[a];
	}
	s->point_argv[n] = NULL;
	runcfg_defaults(c);
	return run_parse_args(c, d, n, s->point_argv, usage) ? -EINVAL : 0;
}

static void show_progress(void *arg, size_t done, size_t total, size_t point, const size_t idx[SWEEP_AXES])
{
	struct progress *p = arg;
	char pt[256];
	if (!progress_due(p))
		return;
	sweep_point_text(sweep_opts.sweep, idx, pt, sizeof pt);
	progress_show(p, "sweep: row %zu/%zu (point %zu) %s", done + 1, total, point, pt);
}

/* ---- report ------------------------------------------------------------------------------- */

static const char *side_tok(int side) { return vocab_side_token(side); }

static void outcome(const struct sweep_row *r, char *buf, size_t n)
{
	if (r->completed)
		snprintf(buf, n, "completed");
	else
		snprintf(buf, n, "failed:%s@%s", cause_name(r->cause), run_side_name(r->side));
}

/* The value of a swept key other than chunk-size, as given. */
static const char *axis_value(const struct sweep_row *r, int a)
{
	return sweep_opts.sweep[a].v[r->idx[a]];
}

/* A swept key's column: its name's width, at least 10. */
static int axis_width(int a)
{
	size_t n = strlen(sweep_axis_key((enum sweep_axis)a));
	return n > 10 ? (int)n : 10;
}

static double gib(uint64_t bytes) { return (double)bytes / (double)(1ull << 30); }

static void print_header(FILE *f)
{
	fprintf(f, "%5s", "POINT");
	for (int a = 0; a < SWEEP_CHUNK; a++)
		if (sweep_varies(sweep_opts.sweep, (enum sweep_axis)a))
			fprintf(f, " %-*s", axis_width(a), sweep_axis_key((enum sweep_axis)a));
	fprintf(f, " %-9s %9s %8s %8s %10s %9s %13s %8s %15s  %s\n", "CHUNK", "TOTAL_MS", "DOWN_MS", "SETUP_MS",
		"MBPS", "XFER_GIB", "REGS_SRC/DST", "COMPRESS", "PINNED_SRC/DST", "OUTCOME");
}

static void print_row(const struct sweep_row *r, FILE *f)
{
	char c1[16], c2[16], chunk[40], regs[48], p1[16], p2[16], pinned[40], out[96];
	const struct metrics *m = &r->m;
	size_format(r->chunk_bytes, c1, sizeof c1);
	size_format(r->dst_chunk_bytes, c2, sizeof c2);
	snprintf(chunk, sizeof chunk, "%s%s%s", c1, r->dst_chunk_bytes != r->chunk_bytes ? "/" : "",
		 r->dst_chunk_bytes != r->chunk_bytes ? c2 : "");
	snprintf(regs, sizeof regs, "%llu/%llu", (unsigned long long)m->src.registrations,
		 (unsigned long long)m->dst.registrations);
	size_format(m->src.pinned_peak_bytes, p1, sizeof p1);
	size_format(m->dst.pinned_peak_bytes, p2, sizeof p2);
	snprintf(pinned, sizeof pinned, "%s/%s", p1, p2);
	outcome(r, out, sizeof out);
	fprintf(f, "%5zu", r->point);
	for (int a = 0; a < SWEEP_CHUNK; a++)
		if (sweep_varies(sweep_opts.sweep, (enum sweep_axis)a))
			fprintf(f, " %-*s", axis_width(a), axis_value(r, a));
	fprintf(f, " %-9s %9llu %8llu %8llu %10.2f %9.3f %13s %8llu %15s  %s\n", chunk,
		(unsigned long long)m->total_time_ms, (unsigned long long)m->downtime_ms,
		(unsigned long long)m->setup_time_ms, m->ram_mbps, gib(m->ram_transferred), regs,
		(unsigned long long)m->src.msgs_sent[VOCAB_MSG_COMPRESS], pinned, out);
}

static void print_table(const struct sweep_result *res, FILE *f)
{
	size_t completed = 0;
	print_header(f);
	for (size_t i = 0; i < res->n_rows; i++) {
		print_row(&res->rows[i], f);
		completed += res->rows[i].completed;
	}
	fprintf(f, "sweep: %zu rows (of %zu points, shard %llu/%llu): %zu completed, %zu failed; %zu met the "
		   "expectation\n", res->n_rows, res->total, (unsigned long long)sweep_opts.shard_k,
		(unsigned long long)sweep_opts.shard_n, completed, res->n_rows - completed, res->n_pass);
}

static json_t *json_row(const struct sweep_row *r)
{
	const struct metrics *m = &r->m;
	const char *src = side_tok(VOCAB_SIDE_SRC), *dst = side_tok(VOCAB_SIDE_DST);
	json_t *row = json_pack("{s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:o}", "point", json_of_u64(r->point), "chunk-size",
				json_of_u64(r->chunk_bytes), "dst-chunk-size", json_of_u64(r->dst_chunk_bytes), "pin-all",
				r->pin_all, "guest", json_of_u64(m->ram_total), "link-gbps",
				json_of_u64(r->link_bytes_per_s * 8 / 1000000000ull), "max-bandwidth",
				json_of_u64(r->max_bandwidth_bytes_per_s), "downtime-limit-ms",
				json_of_u64(r->downtime_limit_ms));
	json_set(&row, "total-time", json_of_u64(m->total_time_ms));
	json_set(&row, "downtime", json_of_u64(m->downtime_ms));
	json_set(&row, "setup-time", json_of_u64(m->setup_time_ms));
	json_set(&row, "mbps", json_of_fixed(m->ram_mbps, 3));
	json_set(&row, "transferred", json_of_u64(m->ram_transferred));
	json_set(&row, "registrations", json_pack("{s:o,s:o}", src, json_of_u64(m->src.registrations), dst,
						  json_of_u64(m->dst.registrations)));
	json_set(&row, "compress", json_of_u64(m->src.msgs_sent[VOCAB_MSG_COMPRESS]));
	json_set(&row, "pinned-peak", json_pack("{s:o,s:o}", src, json_of_u64(m->src.pinned_peak_bytes), dst,
						json_of_u64(m->dst.pinned_peak_bytes)));
	json_set(&row, "status", json_of_str(r->completed ? "completed" : "failed"));
	json_set(&row, "cause", json_of_str(cause_name(r->cause)));
	json_set(&row, "side", json_of_str(run_side_name(r->side)));
	json_set(&row, "verdict", json_of_str(r->pass ? "pass" : "fail"));
	return row;
}

/* The sweep as JSON (no wall time: the same sweep writes the same file), one row a line.
 * 0, or -EIO (a write error, or out of memory when !ferror(f)). */
static int print_json(const struct sweep_cli *s, const struct sweep_result *res, FILE *f)
{
	char shard[48];
	snprintf(shard, sizeof shard, "%llu/%llu", (unsigned long long)sweep_opts.shard_k,
		 (unsigned long long)sweep_opts.shard_n);
	json_t *swept = json_array();
	for (int a = 0; a < SWEEP_AXES; a++)
		if (sweep_varies(sweep_opts.sweep, (enum sweep_axis)a))
			json_add(&swept, json_of_str(sweep_axis_key((enum sweep_axis)a)));
	struct json_stream js;
	json_stream_open(&js, f,
			 json_pack("{s:o,s:s,s:o,s:o}", "backend", json_of_str(s->backend), "shard", shard, "points",
				   json_of_u64(res->total), "swept", swept),
			 "rows", "\n", ",\n", "");
	for (size_t i = 0; i < res->n_rows; i++)
		json_stream_item(&js, json_row(&res->rows[i]));
	return json_stream_close(&js, "\n", json_pack("{s:b}", "ok", res->n_pass == res->n_rows));
}

static void print_csv(const struct sweep_result *res, FILE *f)
{
	const char *s = side_tok(VOCAB_SIDE_SRC), *t = side_tok(VOCAB_SIDE_DST);
	fprintf(f, "point,chunk-size,dst-chunk-size,pin-all,guest,link-gbps,max-bandwidth,downtime-limit-ms,"
		   "total-time,downtime,setup-time,mbps,transferred,registrations-%s,registrations-%s,compress,"
		   "pinned-peak-%s,pinned-peak-%s,status,cause,side,verdict\n", s, t, s, t);
	for (size_t i = 0; i < res->n_rows; i++) {
		const struct sweep_row *r = &res->rows[i];
		const struct metrics *m = &r->m;
		fprintf(f, "%zu,%llu,%llu,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%s,%s,%s,%s\n",
			r->point, (unsigned long long)r->chunk_bytes, (unsigned long long)r->dst_chunk_bytes,
			r->pin_all ? "true" : "false", (unsigned long long)m->ram_total,
			(unsigned long long)(r->link_bytes_per_s * 8 / 1000000000ull),
			(unsigned long long)r->max_bandwidth_bytes_per_s, (unsigned long long)r->downtime_limit_ms,
			(unsigned long long)m->total_time_ms, (unsigned long long)m->downtime_ms,
			(unsigned long long)m->setup_time_ms, m->ram_mbps, (unsigned long long)m->ram_transferred,
			(unsigned long long)m->src.registrations, (unsigned long long)m->dst.registrations,
			(unsigned long long)m->src.msgs_sent[VOCAB_MSG_COMPRESS],
			(unsigned long long)m->src.pinned_peak_bytes, (unsigned long long)m->dst.pinned_peak_bytes,
			r->completed ? "completed" : "failed", cause_name(r->cause), run_side_name(r->side),
			r->pass ? "pass" : "fail");
	}
}

/* ---- plot --------------------------------------------------------------------------------- */

/* The series of the plot: the completed rows grouped by the swept keys other than chunk
 * size (a point's series = point / the number of chunk sizes), one data block each. */
static size_t plot_data(const struct sweep_result *res, FILE *f, size_t *first_row, size_t max)
{
	size_t per = sweep_opts.sweep[SWEEP_CHUNK].n ? sweep_opts.sweep[SWEEP_CHUNK].n : 1, n = 0, cur = (size_t)-1;
	fprintf(f, "$data << EOD\n");
	for (size_t i = 0; i < res->n_rows; i++) {
		const struct sweep_row *r = &res->rows[i];
		if (!r->completed)
			continue;
		if (r->point / per != cur) {
			if (n == max)
				break;
			if (n)
				fprintf(f, "\n\n");
			cur = r->point / per;
			first_row[n++] = i;
		}
		fprintf(f, "%.6f %llu %llu %.6f\n", (double)r->chunk_bytes / (double)(1u << 20),
			(unsigned long long)r->m.total_time_ms, (unsigned long long)r->m.downtime_ms,
			gib(r->m.ram_transferred));
	}
	fprintf(f, "EOD\n");
	return n;
}

static void plot_panel(const struct sweep_result *res, FILE *f, const size_t *first, size_t n, int col,
		       const char *ylabel)
{
	fprintf(f, "set ylabel '%s'\nplot ", ylabel);
	for (size_t g = 0; g < n; g++) {
		char pt[256];
		size_t idx[SWEEP_AXES];
		memcpy(idx, res->rows[first[g]].idx, sizeof idx);
		struct sweep_values ax[SWEEP_AXES];
		memcpy(ax, sweep_opts.sweep, sizeof ax);
		ax[SWEEP_CHUNK].n = 0;   /* the series' name: the other swept keys */
		sweep_point_text(ax, idx, pt, sizeof pt);
		fprintf(f, "%s$data index %zu using 1:%d with linespoints title ", g ? ", " : "", g, col);
		gnuplot_string(f, pt[0] ? pt : "migbed (model)");
	}
	if (!n)   /* no completed row: an empty panel that says so */
		fprintf(f, "-1 notitle");
	fprintf(f, "\n");
}

#define PLOT_SERIES_MAX 16

static void plot_script(const struct sweep_result *res, const char *title, const char *out, bool svg, FILE *f)
{
	size_t first[PLOT_SERIES_MAX];
	fprintf(f, "set terminal %s size %s\nset output ", svg ? "svg" : "png", svg ? "800,1000 dynamic" : "800,1000");
	gnuplot_string(f, out);
	fprintf(f, "\n");
	size_t n = plot_data(res, f, first, PLOT_SERIES_MAX);
	if (!n)
		fprintf(f, "set xrange [1:1024]\nset yrange [0:1]\nset label 1 'no completed row' at graph 0.5,0.5 center\n");
	fprintf(f, "set multiplot layout 3,1 title ");
	char t[200];
	snprintf(t, sizeof t, "migbed sweep (%s)", title);
	gnuplot_string(f, t);
	fprintf(f, "\nset logscale x 2\nset grid\nset key top left\nset xlabel 'chunk size (MiB)'\n");
	if (n)   /* from 0, with room above the highest point (a point on the frame is hidden) */
		fprintf(f, "set yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\n");
	plot_panel(res, f, first, n, 2, "total time (ms)");
	plot_panel(res, f, first, n, 3, "downtime (ms)");
	plot_panel(res, f, first, n, 4, "transferred (GiB)");
	fprintf(f, "unset multiplot\nset output\n");
}

struct plot_arg {
	const struct sweep_result *res;
	const char *title;
};

static void sweep_script(void *arg, const char *out, bool svg, FILE *f)
{
	const struct plot_arg *p = arg;
	plot_script(p->res, p->title, out, svg, f);
}

/* ---- the command -------------------------------------------------------------------------- */

static int report(const struct sweep_cli *s, const struct sweep_result *res, struct out_file *json,
		  struct out_file *csv)
{
	struct diag d = { 0 };
	/* the table on stdout, unless a file goes there (--json - or --csv -) */
	FILE *tf = (json->f == stdout || csv->f == stdout) ? stderr : stdout;
	print_table(res, tf);
	fflush(tf);
	/* the plot first: when gnuplot fails, no other file is committed either */
	struct plot_arg pa = { res, s->plot_title };
	if (sweep_opts.plot[0] && gnuplot_write("sweep", sweep_opts.plot, sweep_script, &pa))
		return CLI_EXIT_USAGE;
	if (json->f) {
		if (print_json(s, res, json->f) && !ferror(json->f))
			return cli_usage_error("sweep: --json %s: out of memory", json->path);
		if (out_file_commit(json, &d))
			return cli_usage_error("sweep: %s", d.msg);
	}
	if (csv->f) {
		print_csv(res, csv->f);
		if (out_file_commit(csv, &d))
			return cli_usage_error("sweep: %s", d.msg);
	}
	return res->n_pass == res->n_rows ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* The output files first (refused before any run), then the sweep, then the report. */
static int sweep(struct sweep_cli *s)
{
	struct sweep_config sc = { .shard_k = sweep_opts.shard_k, .shard_n = sweep_opts.shard_n,
				   .config = point_config, .config_arg = s };
	struct sweep_result res = { 0 };
	struct out_file json = { 0 }, csv = { 0 }, plot = { 0 };
	struct diag d = { 0 };
	int code = 0;
	memcpy(sc.axes, sweep_opts.sweep, sizeof sc.axes);
	if ((sweep_opts.json[0] && out_file_open(&json, sweep_opts.json, &d)) ||
	    (sweep_opts.csv[0] && out_file_open(&csv, sweep_opts.csv, &d)) ||
	    (sweep_opts.plot[0] && out_file_open(&plot, sweep_opts.plot, &d))) {
		code = cli_usage_error("sweep: %s", d.msg);
		goto out;
	}
	out_file_abort(&plot);   /* only checked: gnuplot writes it */
	progress_init(&s->progress, s->quiet);
	sc.progress = s->progress.on ? show_progress : NULL;
	sc.progress_arg = &s->progress;
	int rc = sweep_run(&sc, &res, &d);
	progress_end(&s->progress);
	if (rc)
		code = cli_usage_error("sweep: %s", d.msg);
	else
		code = report(s, &res, &json, &csv);
out:
	out_file_abort(&json);
	out_file_abort(&csv);
	sweep_result_free(&res);
	return code;
}

int cmd_sweep(int argc, char **argv)
{
	struct sweep_cli s = { 0 };
	int rc = parse_args(&s, argc, argv);
	if (rc == 0)
		rc = sweep(&s);
	else
		rc = rc == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	free(s.run_argv);
	free(s.point_argv);
	return rc;
}
