/* SPDX-License-Identifier: MIT */
/* fuzz_scenario - scenario files (`migbed run --scenario`, a bundle's scenario.scn), read by
 * runcfg_load_scenario and checked by runcfg_finish (cli/runcfg.h).
 *
 * Any bytes: accepted, or refused with a diagnostic "FILE:LINE: problem" naming the file.
 * Round trip: a scenario that loads and finishes is written back (runcfg_write_scenario) as
 * text that loads and finishes again, and that text is a fixpoint (parse(format(v)) == v as
 * far as text can tell: the same text again). */
#include "fuzz/fuzz.h"

#include <string.h>

#include "cli/runcfg.h"

static char *written(const struct runcfg *c, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	if (!f)
		abort();
	runcfg_write_scenario(f, c);
	fclose(f);
	return text;
}

/* Load path into a fresh config: 0 or -EINVAL with d set. A line's defect is cited
 * "FILE:LINE: ..."; a conflict between keys (runcfg_finish: options and scenario together)
 * names the keys but no line. */
static int load(const char *path, struct runcfg *c, struct diag *d)
{
	memset(c, 0, sizeof *c);
	runcfg_defaults(c);
	int rc = runcfg_load_scenario(c, path, d);
	if (rc != 0) {
		size_t pl = strlen(path);
		FUZZ_CHECK(!strncmp(d->msg, path, pl) && d->msg[pl] == ':', "refused, but not as 'FILE:...': %s", d->msg);
		return rc;
	}
	rc = runcfg_finish(c, d);
	FUZZ_CHECK(rc == 0 || d->msg[0], "refused without a message");
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct runcfg c, back;
	struct diag d = { 0 };
	const char *p = fuzz_file(".scn", data, size);
	if (!p)
		return 0;
	char *path = strdup(p);
	if (!path)
		abort();
	int rc = load(path, &c, &d);
	if (rc != 0) {
		free(path);
		return 0;
	}
	size_t n1, n2;
	char *t1 = written(&c, &n1);
	FUZZ_CHECK(fuzz_file(".scn", t1, n1) != NULL, "cannot write the written scenario");
	rc = load(path, &back, &d);
	FUZZ_CHECK(rc == 0, "the written scenario is refused: %s\n---\n%s", d.msg, t1);
	char *t2 = written(&back, &n2);
	FUZZ_CHECK(n1 == n2 && !memcmp(t1, t2, n1), "not a fixpoint:\n---\n%s---\n%s", t1, t2);
	free(t1);
	free(t2);
	free(path);
	return 0;
}
