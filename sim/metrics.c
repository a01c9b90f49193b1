/* SPDX-License-Identifier: MIT */
/* metrics - query-migrate-like reporting (see metrics.h). */
#include "sim/metrics.h"

#include <inttypes.h>

#include "sim/json.h"
#include "sim/json_in.h"
#include "vocab/vocab.h"

double metrics_mbps(uint64_t transferred_bytes, uint64_t total_ms, uint64_t setup_ms)
{
	if (total_ms <= setup_ms)
		return 0.0;
	return (double)transferred_bytes * 8.0 / (double)(total_ms - setup_ms) / 1000.0;
}

void metrics_print_human(const struct metrics *m, FILE *f)
{
	fprintf(f, "Migration status: %s\n", m->status);
	fprintf(f, "total time: %" PRIu64 " ms\n", m->total_time_ms);
	if (m->include_wall)
		fprintf(f, "total time (wall clock): %" PRIu64 " ms\n", m->wall_total_ms);
	fprintf(f, "downtime: %" PRIu64 " ms\n", m->downtime_ms);
	fprintf(f, "setup: %" PRIu64 " ms\n", m->setup_time_ms);
	fprintf(f, "transferred ram: %" PRIu64 " kbytes\n", m->ram_transferred >> 10);
	fprintf(f, "throughput: %0.2f mbps\n", m->ram_mbps);
	fprintf(f, "remaining ram: %" PRIu64 " kbytes\n", m->ram_remaining >> 10);
	fprintf(f, "total ram: %" PRIu64 " kbytes\n", m->ram_total >> 10);
	fprintf(f, "duplicate: %" PRIu64 " pages\n", m->ram_duplicate);
	fprintf(f, "normal: %" PRIu64 " pages\n", m->ram_normal);
	fprintf(f, "normal bytes: %" PRIu64 " kbytes\n", (m->ram_normal * m->page_size) >> 10);
	fprintf(f, "dirty sync count: %" PRIu64 "\n", m->dirty_sync_count);
	fprintf(f, "page size: %" PRIu64 " kbytes\n", m->page_size >> 10);
	fprintf(f, "pages-per-second: %" PRIu64 "\n", m->pages_per_second);
	fprintf(f, "dirty pages rate: %" PRIu64 " pages\n", m->dirty_pages_rate);
	fprintf(f, "expected downtime: %" PRIu64 " ms\n", m->expected_downtime_ms);
	fprintf(f, "precopy ram: %" PRIu64 " kbytes\n", m->ram_precopy_bytes >> 10);
	fprintf(f, "downtime ram: %" PRIu64 " kbytes\n", m->ram_downtime_bytes >> 10);
	fprintf(f, "rounds: %" PRIu64 "   rdma writes: %" PRIu64 " (max %" PRIu64 " in flight)\n", m->rounds,
		m->rdma_writes, m->max_writes_in_flight);
	fprintf(f, "chunk size: src %" PRIu64 " KiB, dst %" PRIu64 " KiB, pin-all %s\n", m->chunk_bytes_src >> 10,
		m->chunk_bytes_dst >> 10, m->pin_all ? "on" : "off");
	fprintf(f, "registrations: src %" PRIu64 ", dst %" PRIu64 "; pinned at peak: src %" PRIu64
		   " KiB, dst %" PRIu64 " KiB\n",
		m->src.registrations, m->dst.registrations, m->src.pinned_peak_bytes >> 10,
		m->dst.pinned_peak_bytes >> 10);
	fprintf(f, "control messages sent by src:");
	for (int i = 1; i < METRICS_MSG_TYPES; i++)
		if (m->src.msgs_sent[i])
			fprintf(f, " %s=%" PRIu64, vocab_msg_type_token((unsigned)i), m->src.msgs_sent[i]);
	fprintf(f, "\ncontrol messages sent by dst:");
	for (int i = 1; i < METRICS_MSG_TYPES; i++)
		if (m->dst.msgs_sent[i])
			fprintf(f, " %s=%" PRIu64, vocab_msg_type_token((unsigned)i), m->dst.msgs_sent[i]);
	fprintf(f, "\nguest pages written during migration: %" PRIu64 "\n", m->guest_pages_written);
}

/* A message type's key: its token in QAPI's lower-case-with-dashes ("qemu-file"). */
static void msg_key(int i, char *key, size_t n)
{
	snprintf(key, n, "%s", vocab_msg_type_token((unsigned)i));
	for (char *c = key; *c; c++)
		if (*c == '_')
			*c = '-';
}

/* {TYPE:N, ...} of every message type but the first (none) */
static json_t *json_msgs(const uint64_t *count)
{
	json_t *o = json_object();
	char key[64];
	for (int i = 1; o && i < METRICS_MSG_TYPES; i++) {
		msg_key(i, key, sizeof key);
		if (json_object_set_new(o, key, json_of_u64(count[i]))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *json_side(const struct metrics_side *s)
{
	return json_pack("{s:o,s:o,s:o,s:o}", "registrations", json_of_u64(s->registrations), "pinned-peak-bytes",
			 json_of_u64(s->pinned_peak_bytes), "messages-sent", json_msgs(s->msgs_sent),
			 "messages-received", json_msgs(s->msgs_recv));
}

json_t *metrics_json(const struct metrics *m, const char *error_desc)
{
	json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o}", "status", m->status, "total-time", json_of_u64(m->total_time_ms),
			      "setup-time", json_of_u64(m->setup_time_ms), "downtime", json_of_u64(m->downtime_ms),
			      "expected-downtime", json_of_u64(m->expected_downtime_ms));
	if (o && error_desc && json_object_set_new(o, "error-desc", json_of_str(error_desc)))
		goto fail;
	json_t *ram = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "transferred",
				json_of_u64(m->ram_transferred), "remaining", json_of_u64(m->ram_remaining), "total",
				json_of_u64(m->ram_total), "duplicate", json_of_u64(m->ram_duplicate), "normal",
				json_of_u64(m->ram_normal), "normal-bytes", json_of_u64(m->ram_normal * m->page_size),
				"mbps", json_of_fixed(m->ram_mbps, 3), "dirty-sync-count", json_of_u64(m->dirty_sync_count),
				"page-size", json_of_u64(m->page_size), "precopy-bytes", json_of_u64(m->ram_precopy_bytes),
				"downtime-bytes", json_of_u64(m->ram_downtime_bytes), "dirty-pages-rate",
				json_of_u64(m->dirty_pages_rate), "pages-per-second", json_of_u64(m->pages_per_second));
	json_t *own = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o}", "rounds", json_of_u64(m->rounds), "rdma-writes",
				json_of_u64(m->rdma_writes), "max-writes-in-flight", json_of_u64(m->max_writes_in_flight),
				"guest-pages-written", json_of_u64(m->guest_pages_written), "chunk-size-src",
				json_of_u64(m->chunk_bytes_src), "chunk-size-dst", json_of_u64(m->chunk_bytes_dst), "pin-all",
				m->pin_all, vocab_side_token(VOCAB_SIDE_SRC), json_side(&m->src),
				vocab_side_token(VOCAB_SIDE_DST), json_side(&m->dst));
	if (!o) {
		json_decref(ram);
		json_decref(own);
		return NULL;
	}
	if (json_object_set_new(o, "ram", ram) || json_object_set_new(o, "migbed", own))
		goto fail;
	if (m->include_wall &&
	    json_object_set_new(o, "wall-clock", json_pack("{s:o,s:{s:o,s:o,s:o}}", "total-time", json_of_u64(m->wall_total_ms),
					       "data-phase", "writes", json_of_u64(m->wall_writes), "bytes",
					       json_of_u64(m->wall_write_bytes), "us", json_of_u64(m->wall_write_us))))
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}
