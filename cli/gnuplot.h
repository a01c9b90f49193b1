/* SPDX-License-Identifier: MIT */
/* gnuplot - the pictures (sweep --plot, timeline --plot): gnuplot (Debian gnuplot-nox) reads a
 * script on its standard input and writes PATH.tmp, renamed onto PATH when it exits 0. */
#ifndef MIGBED_CLI_GNUPLOT_H
#define MIGBED_CLI_GNUPLOT_H
#include <stdbool.h>
#include <stdio.h>

/* PATH ends in .svg or .png and gnuplot is on PATH: checked before anything runs.
 * 0, or CLI_EXIT_USAGE after "migbed: CMD: --plot ...". */
int gnuplot_check(const char *cmd, const char *path);
/* s as a gnuplot single-quoted string ('' is a quote). */
void gnuplot_string(FILE *f, const char *s);
/* script(arg, out, svg, f) writes the script to f; its `set output` names out (the
 * temporary). 0, or CLI_EXIT_USAGE after the message (nothing left behind). */
typedef void (*gnuplot_script_fn)(void *arg, const char *out, bool svg, FILE *f);
int gnuplot_write(const char *cmd, const char *path, gnuplot_script_fn script, void *arg);

#endif
