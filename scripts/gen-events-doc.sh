#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/gen-events-doc.sh - every event-log event the code can write, with the keys of its
# fields: "EVENT<TAB>key key ...<TAB>file ...", one line per event, sorted. Read from the calls
# that write the log (evlog_emit, HLOG, SLOG): the event is the call's third argument (a string
# literal), the keys are the "key=" of its format. bats/docs.bats checks that docs/events.md
# names each event and each of its keys, and no event the code does not write.
set -u -o pipefail
cd "$(dirname "$0")/.."
perl -e '
  my %ev;
  for my $f (@ARGV) {
    next if $f =~ /_test\.c$/;
    open(my $h, "<", $f) or die "$f: $!";
    local $/; my $s = <$h>; close $h;
    $s =~ s{/\*.*?\*/}{}gs;
    while ($s =~ /\b(evlog_emit|HLOG|SLOG)\s*\(((?:[^;]|"[^"]*")*?)\)\s*;/gs) {
      my $args = $2;
      next if $args =~ /^\s*(ev|w|ep->w|d->w|s->w),\s*side,\s*event/;   # the macros themselves
      my @a; my $depth = 0; my $cur = "";
      for my $c (split //, $args) {
        if ($c eq "," && $depth == 0) { push @a, $cur; $cur = ""; next }
        $depth++ if $c eq "("; $depth-- if $c eq ")"; $cur .= $c;
      }
      push @a, $cur;
      next unless @a >= 3;
      my ($e) = $a[2] =~ /^\s*"([a-z_.]+)"\s*$/ or next;
      my $fmt = join(",", @a[3..$#a]);
      my %k; $k{$1} = 1 while $fmt =~ /"?\s*([a-z_]+)=/g;
      $ev{$e}{keys}{$_} = 1 for keys %k;
      (my $rel = $f) =~ s{^\./}{};
      $ev{$e}{files}{$rel} = 1;
    }
  }
  for my $e (sort keys %ev) {
    print join("\t", $e, join(" ", sort keys %{$ev{$e}{keys}}), join(" ", sort keys %{$ev{$e}{files}})), "\n";
  }
' $(ls vocab/*.c sim/*.c transport/*.c faults/*.c run/*.c cli/*.c)
