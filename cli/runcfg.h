/* runcfg - the options of a migration run, from a scenario file (`key = value` lines) and
 * from the command line (`--key value`), through one table so both accept the same keys
 * with the same validation. Command-line options override the scenario. */
#ifndef MIGBED_CLI_RUNCFG_H
#define MIGBED_CLI_RUNCFG_H
#include <stdbool.h>
#include <stdint.h>
#include "faults/fault.h"
#include "sim/diag.h"
#include "sim/engine.h"
#include "sim/tracegen.h"
#include "transport/hca.h"

#define RUNCFG_MAX_EXPECT 8
#define RUNCFG_MAX_FAULTS 16

struct runcfg {
	char scenario[1024];        /* path, "" when none */
	char description[256];
	char trace[1024];           /* "" = generate */
	bool gen_keys_used;
	struct tgen_opts gen;
	uint64_t chunk_bytes, dst_chunk_bytes;
	bool dst_chunk_set;
	bool pin_all, dst_pin_all;
	enum hca_backend_kind backend;
	enum mem_repr repr;
	bool repr_set;
	struct hca_cost cost;
	struct engine_opts eng;
	uint64_t wait_timeout_ms;
	uint64_t seed;
	uint32_t caps_version;
	bool src_negotiate, dst_negotiate;   /* --protocol negotiated (per side) */
	bool refuse_mismatch;               /* --on-mismatch refuse */
	uint64_t dst_memlock_bytes;           /* --dst-memlock, 0 = none */
	int ack_timeout;                      /* verbs, -1 = rdma_cm default */
	bool qemu_stream;                     /* the source is a real QEMU */
	char dst_layout[1024];                /* a trace whose header is the destination's RAM layout */
	char qemu_expect_file[1024];          /* what QEMU was loaded with ... */
	uint64_t qemu_expect_addr;            /* ... at this guest address */
	/* faults (docs/faults.md): the scenario's `fault =` lines, then --fault options */
	char faults[RUNCFG_MAX_FAULTS][FAULT_SPEC_MAX];
	int n_faults;
	char fault_counts_path[1024];         /* --fault-counts FILE */
	/* expectation */
	bool expect_completed;
	int expect_causes[RUNCFG_MAX_EXPECT];
	int n_expect;
	char expect_text[256];
	/* outputs */
	char json_path[1024];
	char events_path[1024];
	bool quiet;
	/* verbs */
	char src_addr[256], dst_addr[256];
};

void runcfg_defaults(struct runcfg *c);
/* Apply one key (without "--"). `where` prefixes errors ("file:line" or "--key").
 * 0, or -EINVAL with d set. */
int runcfg_set(struct runcfg *c, const char *key, const char *value, const char *where, struct diag *d);
/* Is key a flag that takes no value on the command line (pin-all, quiet)? */
bool runcfg_is_flag(const char *key);
bool runcfg_known(const char *key);
int runcfg_load_scenario(struct runcfg *c, const char *path, struct diag *d);
/* Cross-option validation after everything is applied. */
int runcfg_finish(struct runcfg *c, struct diag *d);
/* The help text for the keys (shared by --help and docs). */
void runcfg_print_keys(FILE *f);

#endif
