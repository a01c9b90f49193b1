/* SPDX-License-Identifier: MIT */
/* rxe-regcost - time ibv_reg_mr / ibv_dereg_mr against the region's size, on memory that was
 * touched (memset) before and on memory never touched (a fresh anonymous mmap, so the pin
 * faults every page in and the kernel zero-fills it). Used by scripts/measure-rxe.sh inside
 * the soft-RoCE VM; prints `key = value` lines (ns, medians of --reps repeats):
 *   reg-touched-SIZE-ns, reg-untouched-SIZE-ns, dereg-SIZE-ns
 * usage: rxe-regcost [--dev NAME] [--reps N] SIZE_MIB...
 * Build: cc -O2 -o build/rxe-regcost scripts/rxe-regcost.c -libverbs */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* one registration of LEN bytes, touched or not: its reg and dereg times; 0 ok */
static int once(struct ibv_pd *pd, size_t len, int touch, uint64_t *reg, uint64_t *dereg)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (touch)
		memset(p, 0x5a, len);
	uint64_t t0 = now_ns();
	struct ibv_mr *mr = ibv_reg_mr(pd, p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uint64_t t1 = now_ns();
	if (!mr) {
		munmap(p, len);
		return -1;
	}
	ibv_dereg_mr(mr);
	uint64_t t2 = now_ns();
	munmap(p, len);
	*reg = t1 - t0;
	*dereg = t2 - t1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0";
	int reps = 5, i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--dev") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: rxe-regcost [--dev NAME] [--reps N] SIZE_MIB...\n");
			return 2;
		}
	}
	if (i == argc || reps < 1 || reps > 100) {
		fprintf(stderr, "usage: rxe-regcost [--dev NAME] [--reps N (1..100)] SIZE_MIB...\n");
		return 2;
	}
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	for (int d = 0; l && d < n && !ctx; d++)
		if (!strcmp(ibv_get_device_name(l[d]), dev))
			ctx = ibv_open_device(l[d]);
	if (!ctx) {
		fprintf(stderr, "rxe-regcost: no device %s\n", dev);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fprintf(stderr, "rxe-regcost: ibv_alloc_pd failed\n");
		return 1;
	}
	for (; i < argc; i++) {
		size_t mib = strtoul(argv[i], NULL, 10);
		if (!mib || mib > 4096) {
			fprintf(stderr, "rxe-regcost: '%s' is not a size in MiB (1..4096)\n", argv[i]);
			return 2;
		}
		uint64_t rt[100], ru[100], dr[100], x;
		for (int r = 0; r < reps; r++) {   /* alternate touched / untouched */
			if (once(pd, mib << 20, 1, &rt[r], &dr[r]) || once(pd, mib << 20, 0, &ru[r], &x)) {
				fprintf(stderr, "rxe-regcost: registering %zu MiB failed\n", mib);
				return 1;
			}
		}
		printf("reg-touched-%zuM-ns = %llu\n", mib, (unsigned long long)median(rt, reps));
		printf("reg-untouched-%zuM-ns = %llu\n", mib, (unsigned long long)median(ru, reps));
		printf("dereg-%zuM-ns = %llu\n", mib, (unsigned long long)median(dr, reps));
		fflush(stdout);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	return 0;
}
