/* SPDX-License-Identifier: MIT */
/* replay - the main() of a harness built without libFuzzer (fuzz/fuzz.h): runs the harness once
 * on every file of the folders or files given, by default fuzz/corpus/NAME and
 * fuzz/regress/NAME (NAME compiled in as FUZZ_NAME), and prints one TAP line. A property that
 * fails aborts (the crash is the failure); a folder that cannot be read is "not ok". */
#include "fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_NAME
#error "FUZZ_NAME: the harness's name, for its default corpus folders"
#endif

#define REPLAY_MAX_BYTES (16u << 20)

static int replay_file(const char *path, unsigned long *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	uint8_t *buf = malloc(REPLAY_MAX_BYTES);
	if (!buf)
		abort();
	size_t len = fread(buf, 1, REPLAY_MAX_BYTES, f);
	int bad = ferror(f) || !feof(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: read error or larger than %u bytes\n", path, REPLAY_MAX_BYTES);
		free(buf);
		return -1;
	}
	/* libFuzzer hands over a buffer of exactly the input's size: so does replay (ASan sees
	 * a read past the end). */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact)
		abort();
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	(*n)++;
	return 0;
}

static int compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of a folder, in name order (the replay is the same on every machine). */
static int replay_dir(const char *path, unsigned long *n)
{
	DIR *d = opendir(path);
	if (!d) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	char **names = NULL;
	size_t count = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (count == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof *names);
			if (!names)
				abort();
		}
		size_t l = strlen(path) + strlen(e->d_name) + 2;
		names[count] = malloc(l);
		if (!names[count])
			abort();
		snprintf(names[count++], l, "%s/%s", path, e->d_name);
	}
	closedir(d);
	if (count)
		qsort(names, count, sizeof *names, compare);
	int rc = 0;
	for (size_t i = 0; i < count; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && replay_file(names[i], n))
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

static int replay(const char *path, unsigned long *n)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	return S_ISDIR(st.st_mode) ? replay_dir(path, n) : replay_file(path, n);
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = { "fuzz/corpus/" FUZZ_NAME, "fuzz/regress/" FUZZ_NAME };
	unsigned long n = 0;
	int rc = 0;
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s [FILE|DIR]...\nRuns the %s harness once on every file (default: %s %s).\n",
		       argv[0], FUZZ_NAME, defaults[0], defaults[1]);
		return 0;
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			rc |= replay(argv[i], &n);
	} else {
		rc |= replay(defaults[0], &n);
		struct stat st;
		if (stat(defaults[1], &st) == 0)   /* no regression input yet: no folder */
			rc |= replay(defaults[1], &n);
	}
	printf("1..1\n%s 1 - fuzz harness %s: %lu inputs replayed\n", rc || n == 0 ? "not ok" : "ok",
	       FUZZ_NAME, n);
	return rc || n == 0 ? 1 : 0;
}
