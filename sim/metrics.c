/* SPDX-License-Identifier: MIT */
/* metrics - query-migrate-like reporting (see metrics.h). */
#include "sim/metrics.h"

#include <inttypes.h>

#include "sim/json.h"
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
static void json_msg_key(FILE *f, int i)
{
	fputc('"', f);
	for (const char *c = vocab_msg_type_token((unsigned)i); *c; c++)
		fputc(*c == '_' ? '-' : *c, f);
	fputs("\":", f);
}

static void json_side(const struct metrics_side *s, FILE *f)
{
	fprintf(f, "{\"registrations\":%" PRIu64 ",\"pinned-peak-bytes\":%" PRIu64 ",\"messages-sent\":{",
		s->registrations, s->pinned_peak_bytes);
	for (int i = 1; i < METRICS_MSG_TYPES; i++) {
		fputs(i > 1 ? "," : "", f);
		json_msg_key(f, i);
		fprintf(f, "%" PRIu64, s->msgs_sent[i]);
	}
	fprintf(f, "},\"messages-received\":{");
	for (int i = 1; i < METRICS_MSG_TYPES; i++) {
		fputs(i > 1 ? "," : "", f);
		json_msg_key(f, i);
		fprintf(f, "%" PRIu64, s->msgs_recv[i]);
	}
	fprintf(f, "}}");
}

void metrics_print_json(const struct metrics *m, const char *error_desc, FILE *f)
{
	fprintf(f, "{\"status\":\"%s\",\"total-time\":%" PRIu64 ",\"setup-time\":%" PRIu64 ",\"downtime\":%" PRIu64
		   ",\"expected-downtime\":%" PRIu64,
		m->status, m->total_time_ms, m->setup_time_ms, m->downtime_ms, m->expected_downtime_ms);
	if (error_desc) {
		fprintf(f, ",\"error-desc\":");
		json_string(f, error_desc);
	}
	fprintf(f, ",\"ram\":{\"transferred\":%" PRIu64 ",\"remaining\":%" PRIu64 ",\"total\":%" PRIu64
		   ",\"duplicate\":%" PRIu64 ",\"normal\":%" PRIu64 ",\"normal-bytes\":%" PRIu64
		   ",\"mbps\":%.3f,\"dirty-sync-count\":%" PRIu64 ",\"page-size\":%" PRIu64
		   ",\"precopy-bytes\":%" PRIu64 ",\"downtime-bytes\":%" PRIu64 ",\"dirty-pages-rate\":%" PRIu64
		   ",\"pages-per-second\":%" PRIu64 "}",
		m->ram_transferred, m->ram_remaining, m->ram_total, m->ram_duplicate, m->ram_normal,
		m->ram_normal * m->page_size, m->ram_mbps, m->dirty_sync_count, m->page_size,
		m->ram_precopy_bytes, m->ram_downtime_bytes, m->dirty_pages_rate, m->pages_per_second);
	fprintf(f, ",\"migbed\":{\"rounds\":%" PRIu64 ",\"rdma-writes\":%" PRIu64 ",\"max-writes-in-flight\":%" PRIu64
		   ",\"guest-pages-written\":%" PRIu64 ",\"chunk-size-src\":%" PRIu64 ",\"chunk-size-dst\":%" PRIu64
		   ",\"pin-all\":%s,\"src\":",
		m->rounds, m->rdma_writes, m->max_writes_in_flight, m->guest_pages_written, m->chunk_bytes_src,
		m->chunk_bytes_dst, m->pin_all ? "true" : "false");
	json_side(&m->src, f);
	fprintf(f, ",\"dst\":");
	json_side(&m->dst, f);
	fprintf(f, "}");
	if (m->include_wall)
		fprintf(f, ",\"wall-clock\":{\"total-time\":%" PRIu64 ",\"data-phase\":{\"writes\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"us\":%" PRIu64 "}}", m->wall_total_ms, m->wall_writes,
			m->wall_write_bytes, m->wall_write_us);
	fprintf(f, "}");
}
