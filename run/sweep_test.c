/* SPDX-License-Identifier: MIT */
/* sweep_test - the lists (values, their refusals), the cross product's size and order (the
 * last axis fastest), the shards (round robin, together the whole, rows keep their point),
 * and sweep_run on a small model guest: one row per point with the point's config, a
 * point the caller refuses stops the sweep before any run, a mismatch row is a failed row. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "run/sweep.h"
#include "sim/size.h"
#include "vocab/cause.h"

static void test_list_parse(void **state)
{
	struct sweep_values v;
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(sweep_list_parse("1M,32M,1G", &v, &d), 0);
	assert_int_equal(v.n, 3);
	assert_string_equal(v.v[0], "1M");
	assert_string_equal(v.v[2], "1G");
	assert_int_equal(sweep_list_parse("off", &v, &d), 0);
	assert_int_equal(v.n, 1);
	assert_int_equal(sweep_list_parse("1M,,2M", &v, &d), -EINVAL);
	assert_string_equal(d.msg, "'1M,,2M': an empty value (values are separated by single commas)");
	assert_int_equal(sweep_list_parse("", &v, &d), -EINVAL);
	assert_int_equal(sweep_list_parse("1M,", &v, &d), -EINVAL);
	assert_int_equal(sweep_list_parse("1M,2M,1M", &v, &d), -EINVAL);
	assert_string_equal(d.msg, "'1M,2M,1M': '1M' is given twice");
	char longv[64];
	memset(longv, 'x', sizeof longv - 1);
	longv[sizeof longv - 1] = '\0';
	assert_int_equal(sweep_list_parse(longv, &v, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "a value longer than 31 characters"));
	char many[SWEEP_VALUES_MAX * 4 + 16] = "";
	for (int i = 0; i <= SWEEP_VALUES_MAX; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d", i ? "," : "", i);
	assert_int_equal(sweep_list_parse(many, &v, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "more than 64 values"));
	many[strlen(many) - 3] = '\0';   /* drop ",64": 64 values */
	assert_int_equal(sweep_list_parse(many, &v, &d), 0);
	assert_int_equal(v.n, SWEEP_VALUES_MAX);
}

static void set(struct sweep_values *ax, enum sweep_axis a, const char *list)
{
	struct diag d = { 0 };
	assert_int_equal(sweep_list_parse(list, &ax[a], &d), 0);
}

static void test_cross_product_order(void **state)
{
	struct sweep_values ax[SWEEP_AXES];
	size_t idx[SWEEP_AXES];
	char buf[256];
	(void)state;
	memset(ax, 0, sizeof ax);
	assert_int_equal(sweep_points(ax), 1);            /* nothing swept: one run */
	set(ax, SWEEP_CHUNK, "1M,64M,1G");
	set(ax, SWEEP_GUEST, "8G,16G");
	set(ax, SWEEP_PIN_ALL, "off,on");
	assert_int_equal(sweep_points(ax), 12);
	/* guest outermost, then pin-all, chunk-size fastest */
	const char *want[] = { "guest=8G pin-all=off chunk-size=1M", "guest=8G pin-all=off chunk-size=64M",
			       "guest=8G pin-all=off chunk-size=1G", "guest=8G pin-all=on chunk-size=1M" };
	for (size_t i = 0; i < 4; i++) {
		sweep_point(ax, i, idx);
		sweep_point_text(ax, idx, buf, sizeof buf);
		assert_string_equal(buf, want[i]);
	}
	sweep_point(ax, 11, idx);
	sweep_point_text(ax, idx, buf, sizeof buf);
	assert_string_equal(buf, "guest=16G pin-all=on chunk-size=1G");
	assert_int_equal(idx[SWEEP_LINK], 0);             /* not swept */
	/* one value applies to every point, but is no part of its name */
	set(ax, SWEEP_LINK, "10");
	assert_int_equal(sweep_points(ax), 12);
	assert_false(sweep_varies(ax, SWEEP_LINK));
	assert_true(sweep_varies(ax, SWEEP_GUEST));
	sweep_point_text(ax, idx, buf, sizeof buf);
	assert_string_equal(buf, "guest=16G pin-all=on chunk-size=1G");
	assert_string_equal(sweep_axis_key(SWEEP_DOWNTIME), "downtime-limit-ms");
	assert_string_equal(sweep_axis_key(SWEEP_AXES), "?");
	/* too many points: 64^3 > SWEEP_POINTS_MAX */
	char many[SWEEP_VALUES_MAX * 4 + 16] = "";
	for (int i = 0; i < SWEEP_VALUES_MAX; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d", i ? "," : "", i + 1);
	set(ax, SWEEP_LINK, many);
	set(ax, SWEEP_DOWNTIME, many);
	set(ax, SWEEP_BANDWIDTH, many);
	assert_int_equal(sweep_points(ax), 0);
}

static void test_shards_split_the_whole(void **state)
{
	(void)state;
	for (uint64_t n = 1; n <= 4; n++)
		for (size_t i = 0; i < 10; i++) {
			int holders = 0;
			for (uint64_t k = 1; k <= n; k++)
				holders += sweep_in_shard(i, k, n);
			assert_int_equal(holders, 1);
		}
	assert_true(sweep_in_shard(0, 1, 3));
	assert_true(sweep_in_shard(4, 2, 3));
	assert_false(sweep_in_shard(4, 1, 3));
}

/* ---- sweep_run on the model ------------------------------------------------------------- */

struct fake {
	const struct sweep_values *ax;
	size_t refuse_point;               /* (size_t)-1: none */
	size_t configs, progress;
	uint64_t dst_chunk;                /* 0: = chunk */
};

static int fake_config(void *arg, const size_t idx[SWEEP_AXES], struct runcfg *c, struct diag *d)
{
	struct fake *f = arg;
	uint64_t chunk;
	f->configs++;
	runcfg_defaults(c);
	c->gen.guest_bytes = 16u << 20;
	c->gen.worker_bytes = 4u << 20;
	assert_int_equal(size_parse(f->ax[SWEEP_CHUNK].v[idx[SWEEP_CHUNK]], &chunk), 0);
	if (chunk == f->refuse_point)
		return diag_set(d, "refused");
	c->chunk_bytes = chunk;
	c->dst_chunk_bytes = f->dst_chunk ? f->dst_chunk : chunk;
	return 0;
}

static void fake_progress(void *arg, size_t done, size_t total, size_t point, const size_t idx[SWEEP_AXES])
{
	struct fake *f = arg;
	(void)point, (void)idx;
	assert_int_equal(done, f->progress);
	assert_true(done < total);
	f->progress++;
}

static void config_of(struct sweep_config *sc, struct fake *f, const char *chunks)
{
	memset(sc, 0, sizeof *sc);
	set(sc->axes, SWEEP_CHUNK, chunks);
	memset(f, 0, sizeof *f);
	f->ax = sc->axes;
	f->refuse_point = (size_t)-1;
	sc->shard_k = sc->shard_n = 1;
	sc->config = fake_config;
	sc->config_arg = f;
	sc->progress = fake_progress;
	sc->progress_arg = f;
}

static void test_run_rows(void **state)
{
	struct sweep_config sc;
	struct sweep_result res;
	struct fake f;
	struct diag d = { 0 };
	(void)state;
	config_of(&sc, &f, "1M,4M,16M");
	assert_int_equal(sweep_run(&sc, &res, &d), 0);
	assert_int_equal(res.total, 3);
	assert_int_equal(res.n_rows, 3);
	assert_int_equal(res.n_pass, 3);
	assert_int_equal(f.progress, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(res.rows[i].point, i);
		assert_int_equal(res.rows[i].chunk_bytes, (1u << 20) << (2 * i));
		assert_true(res.rows[i].completed);
		assert_int_equal(res.rows[i].cause, CAUSE_NONE);
		assert_int_equal(res.rows[i].m.ram_total, 16u << 20);
		assert_true(res.rows[i].m.total_time_ms > 0);
	}
	/* fewer, larger chunks: fewer registrations */
	assert_true(res.rows[0].m.src.registrations > res.rows[2].m.src.registrations);
	sweep_result_free(&res);
	/* the same sweep, the same rows (no wall time in them) */
	struct sweep_result again;
	config_of(&sc, &f, "1M,4M,16M");
	assert_int_equal(sweep_run(&sc, &res, &d), 0);
	config_of(&sc, &f, "1M,4M,16M");
	assert_int_equal(sweep_run(&sc, &again, &d), 0);
	assert_memory_equal(res.rows, again.rows, res.n_rows * sizeof *res.rows);
	sweep_result_free(&res);
	sweep_result_free(&again);
}

static void test_shard_rows_keep_their_point(void **state)
{
	struct sweep_config sc;
	struct sweep_result res;
	struct fake f;
	struct diag d = { 0 };
	(void)state;
	config_of(&sc, &f, "1M,2M,4M,8M,16M");
	sc.shard_k = 2;
	sc.shard_n = 2;
	assert_int_equal(sweep_run(&sc, &res, &d), 0);
	assert_int_equal(res.total, 5);
	assert_int_equal(res.n_rows, 2);
	assert_int_equal(res.rows[0].point, 1);
	assert_int_equal(res.rows[1].point, 3);
	assert_int_equal(res.rows[1].chunk_bytes, 8u << 20);
	sweep_result_free(&res);
	sc.shard_k = 3;   /* out of bounds */
	assert_int_equal(sweep_run(&sc, &res, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "shard 3 is out of bounds 1..2"));
	sweep_result_free(&res);
}

static void test_refused_point_runs_nothing(void **state)
{
	struct sweep_config sc;
	struct sweep_result res;
	struct fake f;
	struct diag d = { 0 };
	(void)state;
	config_of(&sc, &f, "1M,4M,16M");
	f.refuse_point = 16u << 20;
	assert_int_equal(sweep_run(&sc, &res, &d), -EINVAL);
	assert_string_equal(d.msg, "point 2 (chunk-size=16M): refused");
	assert_int_equal(f.progress, 0);   /* no run started */
	sweep_result_free(&res);
}

static void test_mismatch_is_a_failed_row(void **state)
{
	struct sweep_config sc;
	struct sweep_result res;
	struct fake f;
	struct diag d = { 0 };
	(void)state;
	config_of(&sc, &f, "1M,16M");
	f.dst_chunk = 1u << 20;
	assert_int_equal(sweep_run(&sc, &res, &d), 0);
	assert_int_equal(res.n_rows, 2);
	assert_int_equal(res.n_pass, 1);
	assert_true(res.rows[0].completed);
	assert_false(res.rows[1].completed);
	assert_false(res.rows[1].pass);
	assert_string_equal(cause_name(res.rows[1].cause), "REMOTE_ACCESS_ERROR");
	assert_int_equal(res.rows[1].dst_chunk_bytes, 1u << 20);
	sweep_result_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_parse),
		cmocka_unit_test(test_cross_product_order),
		cmocka_unit_test(test_shards_split_the_whole),
		cmocka_unit_test(test_run_rows),
		cmocka_unit_test(test_shard_rows_keep_their_point),
		cmocka_unit_test(test_refused_point_runs_nothing),
		cmocka_unit_test(test_mismatch_is_a_failed_row),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
