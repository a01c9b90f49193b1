/* SPDX-License-Identifier: MIT */
/* config - the options of one migration run as plain data, with no argv and no scenario
 * syntax in it: cli/runcfg.c parses and validates the scenario file and the options into
 * this struct; the run layer (run/run.h) only reads it. */
#ifndef MIGBED_RUN_CONFIG_H
#define MIGBED_RUN_CONFIG_H
#include <stdbool.h>
#include <stdint.h>
#include "faults/fault.h"
#include "run/engine.h"
#include "sim/diag.h"
#include "sim/tracegen.h"
#include "transport/hca.h"
#include "transport/profile.h"
#include "transport/proto.h"

#define RUNCFG_MAX_EXPECT 8
#define RUNCFG_MAX_FAULTS 16
#define RUNCFG_MAX_HW_SET 16
#define RUNCFG_HW_SET_MAX 96
#define RUNCFG_MAX_KEYS 112         /* rows of cli/runcfg.c's option table, at most */

struct runcfg {
	char scenario[1024];        /* path, "" when none */
	char description[256];
	char trace[1024];           /* "" = generate */
	struct tgen_opts gen;
	bool worker_bytes_total;    /* gen.worker_bytes came from --vm-bytes (stress-ng's): the
	                             * workers' total, divided among them by runcfg_finish */
	bool stressng_spelling;     /* --vm, --vm-bytes or --vm-method given: stress-ng's defaults (churn) */
	bool vm_keep;               /* stress-ng's --vm-keep: no remap churn */
	uint64_t chunk_bytes, dst_chunk_bytes;
	bool pin_all, dst_pin_all;
	enum hca_backend_kind backend;
	enum mem_repr repr;
	struct hca_cost cost;                 /* after runcfg_finish: the model's, hw's, hw-set's, the options' */
	char hw[1024];                        /* hw = NAME|FILE: a hardware profile (run/hw.h), "" = none */
	char hw_set[RUNCFG_MAX_HW_SET][RUNCFG_HW_SET_MAX];   /* hw-set = KEY=VALUE, in order */
	int n_hw_set;
	struct engine_opts eng;
	uint64_t wait_timeout_ms;
	uint64_t seed;
	uint32_t caps_version;
	bool src_negotiate, dst_negotiate;   /* --protocol negotiated (per side) */
	bool refuse_mismatch;               /* --on-mismatch refuse */
	enum proto_impl src_impl, dst_impl;   /* --src-impl, --dst-impl: the peer each side plays */
	uint64_t dst_memlock_bytes;           /* --dst-memlock, 0 = none (not a value: its bound is 1..) */
	int ack_timeout;                      /* verbs, -1 = rdma_cm default */
	uint32_t rnr_retry;                   /* --rnr-retry 0..7: both sides pass it to rdma_cm */
	enum proto_odp dst_odp;               /* --dst-odp off|on|prefetch (model only) */
	bool qemu_stream;                     /* the source is a real QEMU */
	char dst_layout[1024];                /* a trace whose header is the destination's RAM layout */
	char qemu_expect_file[1024];          /* what QEMU was loaded with ... */
	uint64_t qemu_expect_addr;            /* ... at this guest address */
	/* faults (docs/faults.md): the scenario's `fault =` lines, then --fault options */
	char faults[RUNCFG_MAX_FAULTS][FAULT_SPEC_MAX];
	int n_faults;
	char fault_counts_path[1024];         /* --fault-counts FILE */
	/* expect-fired: each rule's injections must be n (or more than n); one value for every
	 * rule, or (a list) one per rule in order, the rules after the list unchecked */
	struct runcfg_fired { uint64_t n; bool more; } expect_fired[RUNCFG_MAX_FAULTS];
	int n_expect_fired;                   /* 0: no expectation */
	bool expect_fired_all;                /* one value, for every rule */
	/* expectation */
	bool expect_completed;
	bool check_source;                    /* not an option (the swarm sets it): the source oracle,
					       * run_outcome's src_checked/src_intact */
	bool check_continue;                  /* not an option (the swarm sets it, with check_source):
					       * after a run failed by fired faults, the same source
					       * migrates again healed (run_outcome's cont_*) */
	bool test_unhealed;                   /* not an option: a test hook of that check, the
					       * second migration keeps the fault rules */
	bool test_leak_listener;              /* not an option: a test hook of the leak oracle, the
					       * run leaves one listener open at its teardown */
	int expect_causes[RUNCFG_MAX_EXPECT];
	int n_expect;
	char expect_text[256];
	/* outputs */
	char json_path[1024];
	char events_path[1024];
	char timeline_path[1024];             /* --timeline FILE: the event log as a Perfetto trace */
	char bundle_path[1024];               /* --bundle DIR: written by the command (cli/bundle.h) */
	bool quiet;
	/* --pause-at SIDE:EVENT[#N]: stop the process (SIGSTOP) right after that event-log line */
	char pause_side[16], pause_event[48];
	uint64_t pause_nth;                   /* 0 = no pause (not a value: N >= 1) */
	/* verbs */
	char src_addr[256], dst_addr[256];
	/* which keys were given (scenario or option), by row of the option table: a default
	 * the front end derives (dst-chunk-size, mem, worker-bytes) applies only to a key not
	 * given; no value stands for "unset". The run layer does not read it. */
	bool given[RUNCFG_MAX_KEYS];
};

/* Every field its default: a small generated rand-set trace (tgen_defaults: 2 workers x 16M
 * at 32M/s in 256M), the model backend, expect completed; nothing given. */
void runcfg_defaults(struct runcfg *c);

#endif
