/* SPDX-License-Identifier: MIT */
/* hw - hardware profiles: the model's cost parameters (struct hca_cost) as a file of
 * `key = value` lines, like a scenario (docs/model.md has every key, unit, meaning and source).
 *
 *   # cx7-bf3: ConnectX-7 / BlueField-3, calibrated on the seed's table
 *   description = ConnectX-7 / BlueField-3 (docs/model.md)
 *   wait-running-us = 1400
 *
 * A profile is named (hw/NAME.hw, found in $MIGBED_HW_PATH's folders, then beside the binary:
 * BIN/../hw (the source tree's build/migbed), BIN/../share/migbed/hw (make install)) or given
 * as a file (a value with a '/' or ending in ".hw"). A key left out keeps the model's default
 * (hca_cost_defaults), so an empty profile is today's model. Bad input: -EINVAL and a diag
 * naming FILE:LINE and the problem; nothing is changed. */
#ifndef MIGBED_RUN_HW_H
#define MIGBED_RUN_HW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/diag.h"
#include "transport/hca.h"

#define HW_PATH_MAX 1024
#define HW_TEXT_MAX 256
#define HW_KEYS_MAX 16

struct hw_profile {
	struct hca_cost cost;
	char path[HW_PATH_MAX];          /* the file it was read from ("" for the built-in default) */
	char description[HW_TEXT_MAX];
	char reference[HW_TEXT_MAX];     /* where its values come from (key `reference`) */
	bool given[HW_KEYS_MAX];         /* which cost keys the file (or a set) gave */
};

/* The cost keys, in table order: name, unit, meaning. */
size_t hw_n_keys(void);
const char *hw_key_name(size_t i);
const char *hw_key_unit(size_t i);
const char *hw_key_help(size_t i);
/* The key's value in c, in its unit. */
uint64_t hw_key_get(const struct hca_cost *c, size_t i);

/* One `key = value` (a cost key, in the key's unit): into c. `where` prefixes the error
 * ("FILE:LINE", "--hw-set"). 0 or -EINVAL. */
int hw_set(struct hca_cost *c, const char *key, const char *value, const char *where, struct diag *d);
/* "key=value" (--hw-set): as hw_set. */
int hw_set_pair(struct hca_cost *c, const char *pair, const char *where, struct diag *d);

/* A name or a file: the file's path into path. 0, or -ENOENT with d naming where it looked. */
int hw_find(const char *name_or_file, char *path, size_t n, struct diag *d);
/* Read a profile file over the model's defaults. 0 or -EINVAL (-ENOENT: cannot open). */
int hw_load_file(const char *path, struct hw_profile *p, struct diag *d);
/* hw_find then hw_load_file. */
int hw_load(const char *name_or_file, struct hw_profile *p, struct diag *d);

/* The installed data folder (hw/, scenarios/, data/): $MIGBED_DATADIR when set, else the
 * compiled-in MIGBED_DATADIR (make install's $(datadir)/migbed). */
const char *hw_datadir(void);
/* The folders searched for named profiles, in order; calls fn(dir, arg) for each that exists:
 * $MIGBED_HW_PATH's, BIN/../hw (the repository), BIN/../share/migbed/hw, hw_datadir()/hw. */
void hw_each_dir(void (*fn)(const char *dir, void *arg), void *arg);

/* The profile as a file hw_load_file reads back to the same costs. */
void hw_write(FILE *f, const struct hw_profile *p);

#endif
