/* SPDX-License-Identifier: MIT */
/* sweep - one migration per point of a cross product of run keys (see sweep.h). */
#include "run/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/judge.h"
#include "vocab/cause.h"

static const char *const axis_keys[] = {
#define X(NAME, key) key,
	SWEEP_AXIS_TABLE(X)
#undef X
};
_Static_assert(sizeof axis_keys / sizeof axis_keys[0] == SWEEP_AXES, "one key per axis");

const char *sweep_axis_key(enum sweep_axis a)
{
	return (unsigned)a < SWEEP_AXES ? axis_keys[a] : "?";
}

int sweep_list_parse(const char *list, struct sweep_values *out, struct diag *d)
{
	const char *s = list;
	memset(out, 0, sizeof *out);
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		if (len == 0)
			return diag_set(d, "'%s': an empty value (values are separated by single commas)", list);
		if (len >= SWEEP_VALUE_MAX)
			return diag_set(d, "'%s': a value longer than %d characters", list, SWEEP_VALUE_MAX - 1);
		if (out->n == SWEEP_VALUES_MAX)
			return diag_set(d, "'%s': more than %d values", list, SWEEP_VALUES_MAX);
		memcpy(out->v[out->n], s, len);
		out->v[out->n][len] = '\0';
		for (size_t j = 0; j < out->n; j++)
			if (!strcmp(out->v[j], out->v[out->n]))
				return diag_set(d, "'%s': '%s' is given twice", list, out->v[j]);
		out->n++;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}

size_t sweep_points(const struct sweep_values ax[SWEEP_AXES])
{
	size_t n = 1;
	for (int a = 0; a < SWEEP_AXES; a++) {
		size_t k = ax[a].n ? ax[a].n : 1;
		if (n > SWEEP_POINTS_MAX / k)
			return 0;
		n *= k;
	}
	return n;
}

void sweep_point(const struct sweep_values ax[SWEEP_AXES], size_t i, size_t idx[SWEEP_AXES])
{
	for (int a = SWEEP_AXES - 1; a >= 0; a--) {   /* the last axis varies fastest */
		size_t k = ax[a].n ? ax[a].n : 1;
		idx[a] = i % k;
		i /= k;
	}
}

bool sweep_varies(const struct sweep_values ax[SWEEP_AXES], enum sweep_axis a)
{
	return (unsigned)a < SWEEP_AXES && ax[a].n > 1;
}

bool sweep_in_shard(size_t i, uint64_t k, uint64_t n)
{
	return n && (uint64_t)i % n == k - 1;
}

void sweep_point_text(const struct sweep_values ax[SWEEP_AXES], const size_t idx[SWEEP_AXES], char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int a = 0; a < SWEEP_AXES && len < n; a++) {
		if (!sweep_varies(ax, (enum sweep_axis)a))
			continue;
		int w = snprintf(buf + len, n - len, "%s%s=%s", len ? " " : "", axis_keys[a], ax[a].v[idx[a]]);
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

/* ---- running ---------------------------------------------------------------------------- */

static int bound(struct diag *d, const char *what, uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v < lo || v > hi)
		return diag_set(d, "sweep: %s %llu is out of bounds %llu..%llu", what, (unsigned long long)v,
				(unsigned long long)lo, (unsigned long long)hi);
	return 0;
}

/* This shard's points, in order, each made into a config (into c, in turn) before any run:
 * a point the caller refuses stops the sweep before it starts. */
static int check_points(const struct sweep_config *sc, struct sweep_result *res, struct runcfg *c,
			struct diag *d)
{
	struct diag why = { 0 };
	char pt[256];
	size_t r = 0;
	for (size_t i = 0; i < res->total; i++) {
		if (!sweep_in_shard(i, sc->shard_k, sc->shard_n))
			continue;
		struct sweep_row *row = &res->rows[r];
		row->point = i;
		sweep_point(sc->axes, i, row->idx);
		if (sc->config(sc->config_arg, row->idx, c, &why)) {
			sweep_point_text(sc->axes, row->idx, pt, sizeof pt);
			return diag_set(d, "point %zu%s%s%s: %s", i, pt[0] ? " (" : "", pt, pt[0] ? ")" : "", why.msg);
		}
		r++;
	}
	return 0;
}

static void take_row(struct sweep_row *row, const struct runcfg *c, const struct run_result *rr)
{
	row->chunk_bytes = c->chunk_bytes;
	row->dst_chunk_bytes = c->dst_chunk_bytes;
	row->pin_all = c->pin_all;
	row->link_bytes_per_s = c->cost.link_bytes_per_s;
	row->max_bandwidth_bytes_per_s = c->eng.max_bandwidth_bytes_per_s;
	row->downtime_limit_ms = c->eng.downtime_limit_ms;
	row->m = rr->m;
	row->m.include_wall = false;   /* deterministic rows */
	row->m.wall_total_ms = 0;
	row->completed = rr->out.completed;
	row->pass = rr->out.pass;
	row->cause = rr->out.completed ? CAUSE_NONE : rr->out.cause;
	row->side = rr->out.completed ? RUN_SIDE_NONE : rr->out.side;
}

static int run_rows(const struct sweep_config *sc, struct sweep_result *res, struct runcfg *c, struct diag *d)
{
	struct run_result *rr = calloc(1, sizeof *rr);
	struct diag why = { 0 };
	char pt[256];
	int rc = rr ? 0 : -ENOMEM;
	for (size_t r = 0; rc == 0 && r < res->n_rows; r++) {
		struct sweep_row *row = &res->rows[r];
		if (sc->progress)
			sc->progress(sc->progress_arg, r, res->n_rows, row->point, row->idx);
		memset(rr, 0, sizeof *rr);
		if (sc->config(sc->config_arg, row->idx, c, &why) || run_migrate(c, rr, &why)) {
			sweep_point_text(sc->axes, row->idx, pt, sizeof pt);
			rc = diag_set(d, "point %zu%s%s%s: %s", row->point, pt[0] ? " (" : "", pt, pt[0] ? ")" : "",
				      why.msg[0] ? why.msg : "bad input");
			break;
		}
		out_file_abort(&rr->json);   /* a sweep's runs write no JSON of their own */
		take_row(row, c, rr);
		res->n_pass += row->pass;
	}
	free(rr);
	return rc;
}

int sweep_run(const struct sweep_config *sc, struct sweep_result *res, struct diag *d)
{
	struct runcfg *c = NULL;
	int rc;
	memset(res, 0, sizeof *res);
	if (bound(d, "shards", sc->shard_n, 1, SWEEP_SHARDS_MAX) || bound(d, "shard", sc->shard_k, 1, sc->shard_n))
		return -EINVAL;
	res->total = sweep_points(sc->axes);
	if (res->total == 0)
		return diag_set(d, "sweep: more than %u points", SWEEP_POINTS_MAX);
	for (size_t i = 0; i < res->total; i++)
		res->n_rows += sweep_in_shard(i, sc->shard_k, sc->shard_n);
	if (res->n_rows == 0)
		return 0;
	res->rows = calloc(res->n_rows, sizeof *res->rows);
	c = malloc(sizeof *c);
	rc = res->rows && c ? check_points(sc, res, c, d) : -ENOMEM;
	if (rc == 0)
		rc = run_rows(sc, res, c, d);
	if (rc == -ENOMEM)
		diag_set(d, "sweep: out of memory");
	free(c);
	return rc;
}

void sweep_result_free(struct sweep_result *res)
{
	free(res->rows);
	memset(res, 0, sizeof *res);
}
