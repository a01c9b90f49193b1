/* SPDX-License-Identifier: MIT */
/* cmd_calibrate - `migbed calibrate`: fit named keys of a hardware profile (run/hw.h) to a table
 * of measured runs by a bounded Nelder-Mead search on the model (docs/model.md, 'Calibrating').
 *
 * The table is CSV with a header: chunk-size,total-time-ms[,downtime-ms][,mbps][,fit] ('#' lines are
 * comments; fit 0 keeps a row out of the fit, to be predicted; a row's downtime-ms, when given, is a
 * second data point of the row, fitted as its total time is). Every evaluation runs the model once per
 * fitted row: the run options given (a scenario, --hw, --hw-set, ...), the row's chunk size, the
 * candidate values as --hw-set. The objective is the sum over fitted rows of ln(model/measured)^2
 * of total time (and of downtime, where the table gives it). The search works on ln(value), within each key's bounds, values rounded to whole
 * units before a run, within [start / 100, start x 100] and the key's bounds, each run bounded by
 * --max-time-ms = 4 x the longest measured time (a candidate a run fails with is a miss); it is deterministic (the model is, and the start and the simplex follow from
 * the profile: each key's value, 1000 of its unit where it is 0, a tenfold step per key) and bounded by --max-evals. It prints the fitted values, every row's error, which
 * orderings of the measured total times the model keeps, warns when a value sits at a bound, and
 * writes the profile (-o FILE: via FILE.tmp, renamed). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "run/hw.h"
#include "run/run.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "sim/size.h"

#define CAL_ROWS_MAX 32
#define CAL_KEYS_MAX 6
#define CAL_EVALS_DEFAULT 60
#define CAL_EVALS_MAX 1000

struct cal_row {
	char chunk[32];
	double total_ms, mbps;   /* mbps < 0: not given */
	double downtime_ms;      /* < 0: not given */
	bool fit;
	double model_ms, model_mbps, model_downtime_ms;
};

struct cal {
	const char *table, *out, *json;
	unsigned max_evals;
	size_t n_keys, n_rows, n_fit;   /* n_fit: the fitted data points (total times and downtimes) */
	int key_idx[CAL_KEYS_MAX];
	double lo[CAL_KEYS_MAX], hi[CAL_KEYS_MAX];   /* ln bounds */
	struct cal_row rows[CAL_ROWS_MAX];
	char **run_argv;
	int run_argc;
	char max_time[48];       /* --max-time-ms=: 4 x the longest measured run, so a wild candidate ends */
	unsigned evals;
	struct hca_cost base;    /* the run options' costs: the start and the profile written */
	struct progress progress;   /* the status line (cli/progress.h) */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed calibrate --table FILE.csv --fit KEY[,KEY...] [-o FILE.hw] [--max-evals N]\n"
		   "                        [--json FILE] [SCENARIO] [run options: --hw, --hw-set, ...]\n\n"
		   "Fit hardware-profile keys (migbed hw keys) to measured runs on the model: a bounded,\n"
		   "deterministic Nelder-Mead search on ln(value) within each key's bounds, minimising the sum of\n"
		   "ln(model/measured)^2 of total time (and downtime, where given) over the table's fitted rows.\n"
		   "The table: CSV, header chunk-size,total-time-ms[,downtime-ms][,mbps][,fit] (fit 0: a row\n"
		   "predicted, not fitted; '#' comments). Each total time and downtime is a data point.\n"
		   "Fewer keys than fitted data points is a fit; as many is a match, said so. Prints the values, each\n"
		   "row's error, which orderings of the measured times hold; -o writes the profile.\n"
		   "  --table FILE.csv   the measured runs (e.g. docs/data/seed-table.csv)\n"
		   "  --fit KEY,...      the keys to fit, at most %d\n"
		   "  -o, --output FILE  write the fitted profile (via FILE.tmp)\n"
		   "  --max-evals N      at most N evaluations (each: one run per fitted row; default %d, <= %d)\n"
		   "  --json FILE        the result as JSON\n"
		   "exit status: 0 fitted, 2 bad usage or input (FILE:LINE: problem)\n",
		CAL_KEYS_MAX, CAL_EVALS_DEFAULT, CAL_EVALS_MAX);
}

/* ---- the table ------------------------------------------------------------------------------ */

static int col_of(char **cols, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(cols[i], name))
			return i;
	return -1;
}

static int split(char *line, char **cols, int max)
{
	int n = 0;
	for (char *s = line; n < max;) {
		char *c = strchr(s, ',');
		if (c)
			*c = '\0';
		while (isspace((unsigned char)*s))
			s++;
		char *e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			*--e = '\0';
		cols[n++] = s;
		if (!c)
			break;
		s = c + 1;
	}
	return n;
}

static int num(const char *v, double *out)
{
	char *end;
	if (!isdigit((unsigned char)v[0]))
		return -1;
	*out = strtod(v, &end);
	return *end || !isfinite(*out) || *out <= 0 ? -1 : 0;
}

static int table_row(struct cal *k, char **cols, int n, const int at[5], const char *where, struct diag *d)
{
	struct cal_row *r = &k->rows[k->n_rows];
	uint64_t cs;
	if (k->n_rows == CAL_ROWS_MAX)
		return diag_set(d, "%s: more than %d rows", where, CAL_ROWS_MAX);
	if (n <= at[0] || n <= at[1] || (at[2] >= 0 && n <= at[2]) || (at[3] >= 0 && n <= at[3]) ||
	    (at[4] >= 0 && n <= at[4]))
		return diag_set(d, "%s: %d columns, fewer than the header's", where, n);
	if (size_parse(cols[at[0]], &cs) || strlen(cols[at[0]]) >= sizeof r->chunk)
		return diag_set(d, "%s: chunk-size: '%s' is not a SIZE", where, cols[at[0]]);
	snprintf(r->chunk, sizeof r->chunk, "%s", cols[at[0]]);
	if (num(cols[at[1]], &r->total_ms))
		return diag_set(d, "%s: total-time-ms: '%s' is not a number above 0", where, cols[at[1]]);
	r->mbps = -1;
	if (at[2] >= 0 && num(cols[at[2]], &r->mbps))
		return diag_set(d, "%s: mbps: '%s' is not a number above 0", where, cols[at[2]]);
	r->downtime_ms = -1;
	if (at[4] >= 0 && num(cols[at[4]], &r->downtime_ms))
		return diag_set(d, "%s: downtime-ms: '%s' is not a number above 0", where, cols[at[4]]);
	r->fit = true;
	if (at[3] >= 0 && strcmp(cols[at[3]], "1") && strcmp(cols[at[3]], "0"))
		return diag_set(d, "%s: fit: '%s' is not 1 or 0", where, cols[at[3]]);
	if (at[3] >= 0)
		r->fit = cols[at[3]][0] == '1';
	k->n_fit += r->fit ? 1u + (r->downtime_ms > 0) : 0u;
	k->n_rows++;
	return 0;
}

static int table_load(struct cal *k, struct diag *d)
{
	FILE *f = fopen(k->table, "r");
	char line[1024], where[1100];
	unsigned long ln = 0;
	int at[5] = { -1, -1, -1, -1, -1 }, rc = 0;
	bool header = false;
	if (!f)
		return diag_set(d, "%s: cannot open the table: %s", k->table, strerror(errno));
	while (rc == 0 && fgets(line, sizeof line, f)) {
		char *cols[16];
		snprintf(where, sizeof where, "%s:%lu", k->table, ++ln);
		if (!strchr(line, '\n') && !feof(f)) {
			rc = diag_set(d, "%s: line longer than %zu bytes", where, sizeof line - 2);
			break;
		}
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		int n = split(line, cols, 16);
		if (header) {
			rc = table_row(k, cols, n, at, where, d);
			continue;
		}
		at[0] = col_of(cols, n, "chunk-size"), at[1] = col_of(cols, n, "total-time-ms");
		at[2] = col_of(cols, n, "mbps"), at[3] = col_of(cols, n, "fit");
		at[4] = col_of(cols, n, "downtime-ms");
		if (at[0] < 0 || at[1] < 0)
			rc = diag_set(d, "%s: the header needs the columns chunk-size and total-time-ms", where);
		header = true;
	}
	fclose(f);
	if (rc == 0 && k->n_fit == 0)
		rc = diag_set(d, "%s: no row to fit", k->table);
	double longest = 0;
	for (size_t i = 0; i < k->n_rows; i++)
		longest = fmax(longest, k->rows[i].total_ms);
	snprintf(k->max_time, sizeof k->max_time, "--max-time-ms=%.0f", fmin(4 * longest + 1000, 86400000));
	return rc;
}

/* ---- one evaluation ------------------------------------------------------------------------- */

static int run_row(struct cal *k, struct cal_row *r, const uint64_t *v, struct diag *d)
{
	char cs[64], sets[CAL_KEYS_MAX][96];
	char **argv = calloc((size_t)k->run_argc + CAL_KEYS_MAX + 4, sizeof *argv);
	struct runcfg *c = calloc(1, sizeof *c);
	struct run_result *res = calloc(1, sizeof *res);
	int n = 0, rc = -ENOMEM;
	if (!argv || !c || !res)
		goto out;
	for (int i = 0; i < k->run_argc; i++)
		argv[n++] = k->run_argv[i];
	snprintf(cs, sizeof cs, "--chunk-size=%s", r->chunk);
	argv[n++] = cs;
	argv[n++] = k->max_time;
	argv[n++] = "--quiet";
	for (size_t i = 0; i < k->n_keys; i++) {
		snprintf(sets[i], sizeof sets[i], "--hw-set=%s=%llu", hw_key_name((size_t)k->key_idx[i]),
			 (unsigned long long)v[i]);
		argv[n++] = sets[i];
	}
	runcfg_defaults(c);
	if ((rc = run_parse_args(c, d, n, argv, usage)) != 0)
		goto out;
	if ((rc = run_migrate(c, res, d)) < 0)
		goto out;
	if (!res->out.pass) {   /* a candidate the migration fails with: no time, a penalty */
		r->model_ms = -1;
		r->model_downtime_ms = -1;
		rc = 0;
		goto out;
	}
	r->model_ms = (double)res->m.total_time_ms;
	r->model_mbps = res->m.ram_mbps;
	r->model_downtime_ms = (double)res->m.downtime_ms;
	rc = 0;
out:
	if (rc == -ENOMEM)
		diag_set(d, "out of memory");
	free(res);
	free(c);
	free(argv);
	return rc;
}

static void to_values(const struct cal *k, const double *x, uint64_t *v)
{
	for (size_t i = 0; i < k->n_keys; i++) {
		double y = x[i] < k->lo[i] ? k->lo[i] : x[i] > k->hi[i] ? k->hi[i] : x[i];
		v[i] = (uint64_t)llround(exp(y));
	}
}

/* The objective at x (ln values), over the fitted rows (all rows when `all`). */
static int evaluate(struct cal *k, const double *x, bool all, double *f, struct diag *d)
{
	uint64_t v[CAL_KEYS_MAX];
	to_values(k, x, v);
	*f = 0;
	k->evals++;
	if (progress_due(&k->progress)) {
		char keys[512];
		size_t n = 0;
		keys[0] = '\0';
		for (size_t i = 0; i < k->n_keys && n < sizeof keys; i++) {
			int w = snprintf(keys + n, sizeof keys - n, " %s=%llu", hw_key_name((size_t)k->key_idx[i]),
					 (unsigned long long)v[i]);
			n += w > 0 ? (size_t)w : 0;
		}
		progress_show(&k->progress, "calibrate: evaluation %u/%u:%s", k->evals, k->max_evals, keys);
	}
	for (size_t i = 0; i < k->n_rows; i++) {
		struct cal_row *r = &k->rows[i];
		if (!r->fit && !all)
			continue;
		if (run_row(k, r, v, d))
			return -EINVAL;
		double e = r->model_ms < 0 ? 100 : log((r->model_ms > 0 ? r->model_ms : 0.5) / r->total_ms);
		*f += r->fit ? e * e : 0;
		if (r->downtime_ms > 0) {   /* a second data point of the row */
			e = r->model_ms < 0 ? 100 :
				log((r->model_downtime_ms > 0 ? r->model_downtime_ms : 0.5) / r->downtime_ms);
			*f += r->fit ? e * e : 0;
		}
	}
	return 0;
}

/* ---- Nelder-Mead (standard coefficients: reflect 1, expand 2, contract 1/2, shrink 1/2) ------ */

static int nelder_mead(struct cal *k, double x[CAL_KEYS_MAX + 1][CAL_KEYS_MAX], double *fx, struct diag *d)
{
	size_t n = k->n_keys;
	for (size_t i = 0; i <= n; i++)
		if (evaluate(k, x[i], false, &fx[i], d))
			return -EINVAL;
	while (k->evals + 2 <= k->max_evals) {
		size_t order[CAL_KEYS_MAX + 1];
		for (size_t i = 0; i <= n; i++)
			order[i] = i;
		for (size_t i = 1; i <= n; i++)   /* insertion sort by fx, index breaks ties */
			for (size_t j = i; j > 0 && fx[order[j]] < fx[order[j - 1]]; j--) {
				size_t t = order[j];
				order[j] = order[j - 1], order[j - 1] = t;
			}
		size_t best = order[0], worst = order[n], second = order[n - 1];
		if (fx[worst] - fx[best] < 1e-10)
			break;
		double c[CAL_KEYS_MAX] = { 0 }, r[CAL_KEYS_MAX], e[CAL_KEYS_MAX], fr, fe;
		for (size_t i = 0; i <= n; i++)
			for (size_t j = 0; j < n && i != worst; j++)
				c[j] += x[i][j] / (double)n;
		for (size_t j = 0; j < n; j++)
			r[j] = c[j] + (c[j] - x[worst][j]);
		if (evaluate(k, r, false, &fr, d))
			return -EINVAL;
		if (fr < fx[best]) {
			for (size_t j = 0; j < n; j++)
				e[j] = c[j] + 2 * (c[j] - x[worst][j]);
			if (evaluate(k, e, false, &fe, d))
				return -EINVAL;
			bool take_e = fe < fr;
			memcpy(x[worst], take_e ? e : r, sizeof e);
			fx[worst] = take_e ? fe : fr;
			continue;
		}
		if (fr < fx[second]) {
			memcpy(x[worst], r, sizeof r);
			fx[worst] = fr;
			continue;
		}
		for (size_t j = 0; j < n; j++)   /* contract toward the centroid */
			e[j] = c[j] + 0.5 * (x[worst][j] - c[j]);
		if (evaluate(k, e, false, &fe, d))
			return -EINVAL;
		if (fe < fx[worst]) {
			memcpy(x[worst], e, sizeof e);
			fx[worst] = fe;
			continue;
		}
		for (size_t i = 0; i <= n && k->evals < k->max_evals; i++) {   /* shrink toward the best */
			if (i == best)
				continue;
			for (size_t j = 0; j < n; j++)
				x[i][j] = x[best][j] + 0.5 * (x[i][j] - x[best][j]);
			if (evaluate(k, x[i], false, &fx[i], d))
				return -EINVAL;
		}
	}
	return 0;
}

/* ---- arguments ------------------------------------------------------------------------------ */

static int parse_fit(struct cal *k, const char *v)
{
	char buf[256];
	if (strlen(v) >= sizeof buf)
		return cli_usage_error("calibrate: --fit: too long");
	memcpy(buf, v, strlen(v) + 1);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int idx = -1;
		for (size_t i = 0; i < hw_n_keys(); i++)
			if (!strcmp(hw_key_name(i), t))
				idx = (int)i;
		if (idx < 0)
			return cli_usage_error("calibrate: --fit: unknown hardware key '%s' (see migbed hw keys)", t);
		for (size_t i = 0; i < k->n_keys; i++)
			if (k->key_idx[i] == idx)
				return cli_usage_error("calibrate: --fit: '%s' given twice", t);
		if (k->n_keys == CAL_KEYS_MAX)
			return cli_usage_error("calibrate: --fit: more than %d keys", CAL_KEYS_MAX);
		k->key_idx[k->n_keys++] = idx;
	}
	return k->n_keys ? 0 : cli_usage_error("calibrate: --fit: no key");
}

/* Our own options out of argv; the rest is a run's (argv[0] = "run"). 1 help, 0 ok, 2 bad. */
static int parse_args(struct cal *k, int argc, char **argv)
{
	k->run_argv = calloc((size_t)argc + 1, sizeof *k->run_argv);
	if (!k->run_argv)
		return cli_usage_error("calibrate: out of memory");
	k->run_argv[k->run_argc++] = "run";
	k->max_evals = CAL_EVALS_DEFAULT;
	progress_init(&k->progress, false);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--table") || !strcmp(a, "--fit") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
		    !strcmp(a, "--max-evals") || !strcmp(a, "--json")) {
			if (!has)
				return cli_usage_error("calibrate: %s needs a value", a);
			const char *v = argv[++i];
			uint64_t x;
			if (!strcmp(a, "--table"))
				k->table = v;
			else if (!strcmp(a, "--json"))
				k->json = v;
			else if (a[1] == 'o' || !strcmp(a, "--output"))
				k->out = v;
			else if (!strcmp(a, "--fit") && parse_fit(k, v))
				return 2;
			else if (!strcmp(a, "--max-evals") &&
				 (size_parse_u64(v, &x) || x < 3 || x > CAL_EVALS_MAX))
				return cli_usage_error("calibrate: --max-evals: '%s' is not a number from 3 to %d", v,
						       CAL_EVALS_MAX);
			else if (!strcmp(a, "--max-evals"))
				k->max_evals = (unsigned)x;
			continue;
		}
		k->run_argv[k->run_argc++] = argv[i];
	}
	if (!k->table || !k->n_keys)
		return cli_usage_error("calibrate: --table and --fit are required (see migbed calibrate --help)");
	return 0;
}

/* ---- report ------------------------------------------------------------------------------- */

static void print_rows(const struct cal *k, FILE *f)
{
	fprintf(f, "%-8s %14s %12s %8s %10s %10s %8s %12s %12s %8s  %s\n", "CHUNK", "MEASURED_MS", "MODEL_MS", "ERROR",
		"MEAS_DOWN", "MODEL_DOWN", "ERROR", "MEAS_MBPS", "MODEL_MBPS", "ERROR", "ROW");
	for (size_t i = 0; i < k->n_rows; i++) {
		const struct cal_row *r = &k->rows[i];
		char mb[16] = "-", me[16] = "-", db[16] = "-", de[16] = "-";
		if (r->downtime_ms > 0) {
			snprintf(db, sizeof db, "%.0f", r->downtime_ms);
			snprintf(de, sizeof de, "%+.0f%%", 100 * (r->model_downtime_ms - r->downtime_ms) / r->downtime_ms);
		}
		if (r->mbps > 0) {
			snprintf(mb, sizeof mb, "%.0f", r->mbps);
			snprintf(me, sizeof me, "%+.0f%%", 100 * (r->model_mbps - r->mbps) / r->mbps);
		}
		fprintf(f, "%-8s %14.0f %12.0f %7.0f%% %10s %10.0f %8s %12s %12.0f %8s  %s\n", r->chunk, r->total_ms,
			r->model_ms, 100 * (r->model_ms - r->total_ms) / r->total_ms, db, r->model_downtime_ms, de, mb,
			r->model_mbps, me,
			r->fit ? "fitted" : "predicted");
	}
}

/* Each pair of rows whose measured total times differ: does the model order them the same? */
static unsigned orderings(const struct cal *k, FILE *f, unsigned *held)
{
	unsigned n = 0;
	*held = 0;
	for (size_t i = 0; i < k->n_rows; i++)
		for (size_t j = i + 1; j < k->n_rows; j++) {
			const struct cal_row *a = &k->rows[i], *b = &k->rows[j];
			if (a->total_ms == b->total_ms)
				continue;
			bool meas = a->total_ms > b->total_ms, ok = (a->model_ms > b->model_ms) == meas;
			n++;
			*held += ok;
			if (f)
				fprintf(f, "  %s %s %s: %s\n", a->chunk, meas ? ">" : "<", b->chunk, ok ? "holds" : "VIOLATED");
		}
	return n;
}

static int write_profile(const struct cal *k, const uint64_t *v, struct diag *d)
{
	struct hw_profile p = { .cost = k->base };
	char tmp[HW_PATH_MAX + 8];
	for (size_t i = 0; i < k->n_keys; i++) {
		char val[32];
		snprintf(val, sizeof val, "%llu", (unsigned long long)v[i]);
		if (hw_set(&p.cost, hw_key_name((size_t)k->key_idx[i]), val, "calibrate", d))
			return -EINVAL;
	}
	snprintf(p.description, sizeof p.description, "calibrated by migbed calibrate");
	snprintf(p.reference, sizeof p.reference, "migbed calibrate on %.200s", k->table);
	if (snprintf(tmp, sizeof tmp, "%s.tmp", k->out) >= (int)sizeof tmp)
		return diag_set(d, "%s: path too long", k->out);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return diag_set(d, "%s: cannot write: %s", tmp, strerror(errno));
	hw_write(f, &p);
	if (fclose(f) != 0 || rename(tmp, k->out) != 0) {
		remove(tmp);
		return diag_set(d, "%s: cannot write: %s", k->out, strerror(errno));
	}
	return 0;
}

static int write_json(const struct cal *k, const uint64_t *v, double fx, unsigned held, unsigned pairs, struct diag *d)
{
	char tmp[1100];
	snprintf(tmp, sizeof tmp, "%s.tmp", k->json);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return diag_set(d, "%s: cannot write: %s", tmp, strerror(errno));
	json_t *fit = json_object(), *rows = json_array();
	for (size_t i = 0; i < k->n_keys; i++)
		json_set(&fit, hw_key_name((size_t)k->key_idx[i]), json_of_u64(v[i]));
	for (size_t i = 0; i < k->n_rows; i++) {
		const struct cal_row *r = &k->rows[i];
		json_t *row = json_pack("{s:o,s:b,s:o,s:o,s:o}", "chunk-size", json_of_str(r->chunk), "fit", r->fit,
					"measured-ms", json_of_fixed(r->total_ms, 0), "model-ms", json_of_fixed(r->model_ms, 0),
					"model-mbps", json_of_fixed(r->model_mbps, 3));
		if (r->mbps > 0)
			json_set(&row, "measured-mbps", json_of_fixed(r->mbps, 0));
		json_set(&row, "model-downtime-ms", json_of_fixed(r->model_downtime_ms, 0));
		if (r->downtime_ms > 0)
			json_set(&row, "measured-downtime-ms", json_of_fixed(r->downtime_ms, 0));
		json_add(&rows, row);
	}
	json_t *doc = json_pack("{s:o,s:I,s:o,s:o,s:o,s:{s:I,s:I}}", "table", json_of_str(k->table), "evals",
				(json_int_t)k->evals, "objective", json_of_sig(fx, 6), "fit", fit, "rows", rows, "orderings",
				"pairs", (json_int_t)pairs, "held", (json_int_t)held);
	bool built = doc != NULL;
	if (json_dump(f, doc)) {
		int e = errno;
		fclose(f);
		remove(tmp);
		return diag_set(d, "%s: cannot write: %s", k->json, built ? strerror(e) : "out of memory");
	}
	if (fclose(f) != 0 || rename(tmp, k->json) != 0) {
		remove(tmp);
		return diag_set(d, "%s: cannot write: %s", k->json, strerror(errno));
	}
	return 0;
}

/* ---- the command ------------------------------------------------------------------------------- */

static int start(struct cal *k, double x[CAL_KEYS_MAX + 1][CAL_KEYS_MAX], struct diag *d)
{
	struct runcfg *c = calloc(1, sizeof *c);
	if (!c)
		return diag_set(d, "out of memory");
	runcfg_defaults(c);
	int rc = run_parse_args(c, d, k->run_argc, k->run_argv, usage);
	k->base = c->cost;
	free(c);
	if (rc)
		return -EINVAL;
	for (size_t i = 0; i < k->n_keys; i++) {   /* the profile's value (1000 for a 0: off), ln; bounds ln */
		size_t idx = (size_t)k->key_idx[i];
		uint64_t v = hw_key_get(&k->base, idx);
		struct hca_cost probe = k->base;
		struct diag dd = { 0 };
		double v0 = v ? (double)v : 1000.0;
		k->lo[i] = log(v0 / 100) > 0 ? log(v0 / 100) : 0;   /* a whole unit at least */
		k->hi[i] = log(v0 * 100);
		for (double e = 12; e >= 0; e--) {   /* and the key's upper bound, as hw_set takes it */
			char val[32];
			snprintf(val, sizeof val, "%.0f", pow(10, e));
			if (hw_set(&probe, hw_key_name(idx), val, "", &dd) == 0) {
				k->hi[i] = fmin(k->hi[i], log(pow(10, e)));
				break;
			}
		}
		for (size_t p = 0; p <= k->n_keys; p++)
			x[p][i] = log(v0) + (p == i + 1 ? log(10.0) : 0);
	}
	return 0;
}

int cmd_calibrate(int argc, char **argv)
{
	struct cal *k = calloc(1, sizeof *k);
	struct diag d = { 0 };
	double x[CAL_KEYS_MAX + 1][CAL_KEYS_MAX], fx[CAL_KEYS_MAX + 1], f;
	uint64_t v[CAL_KEYS_MAX];
	int rc = k ? parse_args(k, argc, argv) : cli_usage_error("calibrate: out of memory");
	if (rc)
		goto out;
	rc = CLI_EXIT_USAGE;
	if (table_load(k, &d) || start(k, x, &d)) {
		cli_usage_error("calibrate: %s", d.msg);
		goto out;
	}
	if (k->n_keys > k->n_fit) {
		cli_usage_error("calibrate: %zu keys for %zu fitted data points: more parameters than data points", k->n_keys,
				k->n_fit);
		goto out;
	}
	if (nelder_mead(k, x, fx, &d)) {
		cli_usage_error("calibrate: %s", d.msg);
		goto out;
	}
	size_t best = 0;
	for (size_t i = 1; i <= k->n_keys; i++)
		best = fx[i] < fx[best] ? i : best;
	to_values(k, x[best], v);
	progress_end(&k->progress);
	if (evaluate(k, x[best], true, &f, &d)) {   /* every row, the predicted ones too */
		cli_usage_error("calibrate: %s", d.msg);
		goto out;
	}
	printf("calibrate: %zu key(s) on %zu fitted data point(s) (total times, downtimes) of %zu row(s), %u evaluations, "
	       "objective %.3g%s\n", k->n_keys, k->n_fit, k->n_rows, k->evals, f,
	       k->n_keys == k->n_fit ? " (as many keys as data points: matched, not over-determined)" : "");
	for (size_t i = 0; i < k->n_keys; i++) {
		size_t idx = (size_t)k->key_idx[i];
		double y = log((double)v[i]);
		bool sat = y <= k->lo[i] + 0.01 || y >= k->hi[i] - 0.01;
		printf("  %s = %llu %s%s\n", hw_key_name(idx), (unsigned long long)v[i], hw_key_unit(idx),
		       sat ? "   WARNING: at its bound (saturated: the data do not determine it)" : "");
	}
	print_rows(k, stdout);
	unsigned held, pairs = orderings(k, NULL, &held);
	printf("orderings of the measured total times: %u of %u hold\n", held, pairs);
	orderings(k, stdout, &held);
	if ((k->out && write_profile(k, v, &d)) || (k->json && write_json(k, v, f, held, pairs, &d))) {
		cli_usage_error("calibrate: %s", d.msg);
		goto out;
	}
	if (k->out)
		printf("wrote %s\n", k->out);
	rc = CLI_EXIT_OK;
out:
	if (k)
		free(k->run_argv);
	free(k);
	return rc == 1 ? CLI_EXIT_OK : rc;
}
