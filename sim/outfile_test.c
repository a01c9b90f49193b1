/* SPDX-License-Identifier: MIT */
/* outfile_test - the rules of sim/outfile.h: tmp+rename, symlinks followed, in place for a
 * FIFO or device, standard output, refusals that create nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/outfile.h"

static char dir[64];

static int setup(void **st)
{
	(void)st;
	strcpy(dir, "/tmp/outfile_test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	(void)st;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *in_dir(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
	return buf[i];
}

static const char *slurp(const char *path)
{
	static char buf[256];
	FILE *fp = fopen(path, "r");
	size_t n;

	if (!fp)
		return NULL;
	n = fread(buf, 1, sizeof buf - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static void put(struct outfile *o, const char *s)
{
	assert_int_equal(write(o->fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void test_new_file_via_tmp(void **st)
{
	struct outfile o;
	const char *p = in_dir("a.out"), *tmp = in_dir("a.out.tmp");

	(void)st;
	assert_int_equal(outfile_open(&o, p), 0);
	assert_int_equal(o.mode, OUTFILE_RENAME);
	assert_string_equal(outfile_writing(&o), tmp);
	put(&o, "hello\n");
	assert_null(slurp(p));                 /* nothing at the target until commit */
	assert_int_equal(outfile_commit(&o), 0);
	assert_string_equal(slurp(p), "hello\n");
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(o.mode, OUTFILE_CLOSED);
	assert_int_equal(outfile_commit(&o), 0);     /* closed: a no-op */
}

static void test_abort_leaves_target(void **st)
{
	struct outfile o;
	const char *p = in_dir("b.out");
	FILE *fp = fopen(p, "w");

	(void)st;
	assert_non_null(fp);
	fputs("old\n", fp);
	fclose(fp);
	assert_int_equal(outfile_open(&o, p), 0);
	put(&o, "new\n");
	outfile_abort(&o);
	outfile_abort(&o);                     /* twice: a no-op */
	assert_string_equal(slurp(p), "old\n");
	assert_int_equal(access(in_dir("b.out.tmp"), F_OK), -1);
}

static void test_symlink_stays_a_link(void **st)
{
	struct outfile o;
	const char *link = in_dir("link"), *target = in_dir("target");
	char got[256];
	ssize_t n;

	(void)st;
	assert_int_equal(symlink("target", link), 0);   /* dangling: created at the target */
	assert_int_equal(outfile_open(&o, link), 0);
	assert_string_equal(o.final, target);
	assert_string_equal(outfile_writing(&o), in_dir("target.tmp"));
	put(&o, "one\n");
	assert_int_equal(outfile_commit(&o), 0);
	n = readlink(link, got, sizeof got - 1);
	assert_int_equal(n, 6);
	got[n] = '\0';
	assert_string_equal(got, "target");
	assert_string_equal(slurp(target), "one\n");
	assert_string_equal(slurp(link), "one\n");
}

static void test_fifo_and_device_in_place(void **st)
{
	struct outfile o;
	const char *fifo = in_dir("fifo");
	int rd;
	char buf[16] = { 0 };

	(void)st;
	assert_int_equal(mkfifo(fifo, 0600), 0);
	rd = open(fifo, O_RDONLY | O_NONBLOCK);     /* a reader, so the writer's open returns */
	assert_true(rd >= 0);
	assert_int_equal(outfile_open(&o, fifo), 0);
	assert_int_equal(o.mode, OUTFILE_IN_PLACE);
	assert_string_equal(outfile_writing(&o), fifo);
	put(&o, "fifo\n");
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(read(rd, buf, sizeof buf - 1), 5);
	assert_string_equal(buf, "fifo\n");
	close(rd);
	assert_int_equal(access(in_dir("fifo.tmp"), F_OK), -1);

	/* a device (not /dev/null: with standard output there, it is standard output's file) */
	assert_int_equal(outfile_open(&o, "/dev/zero"), 0);
	assert_int_equal(o.mode, OUTFILE_IN_PLACE);
	put(&o, "x");
	assert_int_equal(outfile_commit(&o), 0);
	assert_int_equal(access("/dev/zero.tmp", F_OK), -1);
}

static void test_dash_is_stdout(void **st)
{
	struct outfile o;

	char cwd[4096];

	(void)st;
	/* in the test's own folder: a file named "-" elsewhere (left by an old build) says nothing */
	assert_non_null(getcwd(cwd, sizeof cwd));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(outfile_open(&o, "-"), 0);
	assert_int_equal(o.mode, OUTFILE_STDOUT);
	assert_int_equal(o.fd, STDOUT_FILENO);
	assert_string_equal(outfile_writing(&o), "-");
	assert_int_equal(outfile_commit(&o), 0);
	assert_true(fcntl(STDOUT_FILENO, F_GETFD) >= 0);   /* still open */
	assert_int_equal(access("-", F_OK), -1);
	assert_int_equal(outfile_open(&o, "-"), 0);
	outfile_abort(&o);
	assert_true(fcntl(STDOUT_FILENO, F_GETFD) >= 0);
	assert_int_equal(access("-", F_OK), -1);
	assert_int_equal(chdir(cwd), 0);
}

static void test_refusals_create_nothing(void **st)
{
	struct outfile o;
	const char *sub = in_dir("sub");

	(void)st;
	assert_int_equal(outfile_open(&o, ""), -EINVAL);
	assert_int_equal(outfile_open(&o, NULL), -EINVAL);
	assert_int_equal(outfile_open(&o, in_dir("no/such/dir/x")), -ENOENT);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(outfile_open(&o, sub), -EISDIR);
	assert_int_equal(o.mode, OUTFILE_CLOSED);
	assert_int_equal(o.fd, -1);
	assert_int_equal(access(in_dir("sub.tmp"), F_OK), -1);
	assert_int_equal(symlink("loop", in_dir("loop")), 0);
	assert_int_equal(outfile_open(&o, in_dir("loop")), -ELOOP);
	if (geteuid() != 0) {               /* root writes anywhere */
		assert_int_equal(chmod(sub, 0555), 0);
		assert_int_equal(outfile_open(&o, in_dir("sub/x")), -EACCES);
		assert_int_equal(chmod(sub, 0755), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_file_via_tmp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_leaves_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_stays_a_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_and_device_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dash_is_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals_create_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
