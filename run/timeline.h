/* SPDX-License-Identifier: MIT */
/* timeline - a run's event log as a picture: Chrome/Perfetto trace-event JSON
 * (https://ui.perfetto.dev or chrome://tracing open it).
 *
 * Tracks (process / thread):
 *   migration    phases:   setup, each round (pages sent, pending after), bitmap syncs,
 *                          the switchover and the downtime (VM stopped -> destination done)
 *                counters: pending bytes, measured bandwidth (bytes/ms), switchover threshold
 *   source       control:  each control message sent and received (type, length)
 *                chunks:   each REGISTER REQUEST -> RESULT exchange (block, chunk), as a span
 *                writes:   RDMA WRITEs in flight (a counter)
 *                connection: connect, established, disconnect
 *                faults:   each fault that fired, each failure (cause)
 *   dest         the same (its chunks track: each chunk it pinned, with the bytes)
 * Times are the log's (virtual on the model), in microseconds. Events the picture does not
 * show (each post_recv, each completion) are left out; the output is deterministic. */
#ifndef MIGBED_RUN_TIMELINE_H
#define MIGBED_RUN_TIMELINE_H
#include <stdio.h>
#include "sim/diag.h"

/* Reads the event log at events_path, writes the trace JSON to out_path (out_file's rules:
 * whole or not at all). 0; -EINVAL with d = "FILE:LINE: problem" for a line that is not an
 * event-log line; -errno with d for I/O. */
int timeline_write(const char *events_path, const char *out_path, struct diag *d);

/* The same log as gnuplot data: the block $spans ("START_MS END_MS ROW": 1 the downtime, 2
 * the source's REGISTER REQUEST -> RESULT exchanges, 3 setup, 4 the rounds), the block $writes
 * ("TIME_MS WRITES_IN_FLIGHT", for steps) and end_ms, the log's last time. Errors as
 * timeline_write's (nothing useful written to f then). */
int timeline_plot_data(const char *events_path, FILE *f, struct diag *d);

#endif
