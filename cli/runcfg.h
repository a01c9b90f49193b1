/* runcfg - the options of a migration run, from a scenario file (`key = value` lines) and
 * from the command line (`--key value`), through one table so both accept the same keys
 * with the same validation. Command-line options override the scenario. */
#ifndef MIGBED_CLI_RUNCFG_H
#define MIGBED_CLI_RUNCFG_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "run/config.h"
#include "sim/diag.h"

/* Apply one key (without "--"). `where` prefixes errors ("file:line" or "--key").
 * 0, or -EINVAL with d set. */
int runcfg_set(struct runcfg *c, const char *key, const char *value, const char *where, struct diag *d);
/* Is key a flag that takes no value on the command line (pin-all, quiet)? */
bool runcfg_is_flag(const char *key);
bool runcfg_known(const char *key);
int runcfg_load_scenario(struct runcfg *c, const char *path, struct diag *d);
/* Cross-option validation after everything is applied. */
int runcfg_finish(struct runcfg *c, struct diag *d);
/* The help text for the keys (shared by --help and docs), from the one option table. */
void runcfg_print_keys(FILE *f);
/* The same table as markdown: README's key table (`migbed options --markdown`). */
void runcfg_print_markdown(FILE *f);
/* The table's rows, for tests: key i's name (NULL past the end); its default as shown into
 * buf, true when giving that text (up to a ':' that starts a comment) leaves runcfg_defaults()
 * unchanged: it is the real one. */
size_t runcfg_n_keys(void);
const char *runcfg_key_name(size_t i);
bool runcfg_key_default(size_t i, char *buf, size_t n);

#endif
