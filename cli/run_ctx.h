/* run_ctx - what `migbed run`, `migbed source` and `migbed dest` share: options (scenario
 * + command line), the trace (given or generated), the guest memories, the transport
 * world with its event log, and the protocol endpoints of the roles this process plays. */
#ifndef MIGBED_CLI_RUN_CTX_H
#define MIGBED_CLI_RUN_CTX_H
#include <stdbool.h>
#include <stdio.h>
#include "cli/run_report.h"
#include "cli/runcfg.h"
#include "sim/engine.h"

struct qemu_stream;
struct qemu_stream_writer;

enum run_role { ROLE_BOTH, ROLE_SRC, ROLE_DST };

struct run {
	enum run_role role;
	struct runcfg c;
	char trace_path[1024];
	bool trace_tmp;
	mem *src, *dst;
	evlog *ev;
	hca_world *w;
	proto_src *ps;
	proto_dst *pd;
	struct metrics m;
	struct run_outcome out;
	struct diag d;
	uint64_t wall_start_ms;
	struct qemu_stream *qs;     /* --qemu-stream: the reader of a real QEMU's stream */
	struct qemu_stream_writer *qw; /* --qemu-stream on the source: writes QEMU's stream */
	fault_plan *faults;            /* the run's fault plan (empty: only counts calls) */
	bool faults_io_error;          /* --fault-counts could not be written (d set) */
};

/* Scenario (positional) then options. 1: --help was printed; 0 ok; <0 bad input (r->d). */
int run_parse_args(struct run *r, int argc, char **argv, void (*usage)(FILE *));
int run_prepare_trace(struct run *r);
int run_make_memories(struct run *r);
int run_make_world(struct run *r);
/* Keep the destination going until it has finished (or wall/virtual budget is spent). */
void run_pump_dst(struct run *r, uint64_t budget_ns);
void run_collect_dst_metrics(struct run *r);
void run_cleanup(struct run *r);
/* --dst-memlock (see run_ctx.c); on verbs call it after listening, before accepting. */
int run_apply_memlock(struct run *r);
uint64_t run_wall_ms(void);
/* Write the report, close the event log; returns the exit code. */
int run_finish_report(struct run *r);

#endif
