#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# make install / make uninstall (GNU layout, DESTDIR), the installed migbed outside the
# repository (the README's quick tour, scenarios and hw profiles from the installed datadir),
# the installed helpers finding the installed migbed, the man pages and the bash completion;
# and a plain make never running apt-get. The install runs from a copy of the build folder
# under test (its objects are reused: only run/hw.o, which holds the datadir, is rebuilt), so
# the build folder itself is left as it was. Under `make check` the copy is built with the
# same flags (make passes them down in MAKEFLAGS).
load helpers

ROOT=$BATS_TEST_DIRNAME/..

# make in the repository on the copy of the build folder
mk() { make --no-print-directory -C "$ROOT" BUILD="$B" "$@"; }

setup_file() {
  local src
  # the build folder of the binary under test (make coverage runs a recording wrapper as MIGBED)
  src=$(cd "$(dirname "${MIGBED_REAL:-$MIGBED}")" && pwd) || return 1
  export B=$BATS_FILE_TMPDIR/build D=$BATS_FILE_TMPDIR/root
  mkdir -p "$B"
  # the build's products and stamps, times kept (so make sees them up to date)
  (cd "$src" || exit 1; cp -a obj .deps-ok pkg.mk libmigbed.a migbed "$B"/) || return 1
  make --no-print-directory -C "$BATS_TEST_DIRNAME/.." BUILD="$B" install DESTDIR="$D" PREFIX=/usr \
    >"$BATS_FILE_TMPDIR/install.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/install.log" >&3; return 1; }
}

@test "make install DESTDIR=... PREFIX=/usr: the GNU layout, no library, helpers that know the bindir" {
  for f in usr/bin/migbed usr/libexec/migbed/detect usr/libexec/migbed/rxe-vm usr/libexec/migbed/migbed-qemu \
           usr/libexec/migbed/guest-init.sh usr/libexec/migbed/qemu-lib.bash usr/libexec/migbed/deps.sh \
           usr/share/migbed/hw/cx7-bf3.hw usr/share/migbed/data/layouts/small-ram.trace \
           usr/share/doc/migbed/README.md usr/share/doc/migbed/LICENSE usr/share/doc/migbed/trace-format.md \
           usr/share/man/man1/migbed.1 usr/share/man/man5/migbed-trace.5 \
           usr/share/bash-completion/completions/migbed; do
    [ -s "$D/$f" ] || { echo "missing: $f"; return 1; }
  done
  [ -x "$D/usr/bin/migbed" ]
  [ -x "$D/usr/libexec/migbed/rxe-vm" ]
  run ls "$D/usr/share/migbed/scenarios"
  [ "$(grep -c '\.scn$' <<<"$output")" -eq "$(ls "$ROOT"/bats/scenarios/*.scn | wc -l)" ]
  # no public library: nothing in lib/ or include/, no .pc
  run find "$D" -path '*/lib/*' -o -path '*/include/*' -o -name '*.pc' -o -name '*.a'
  [ -z "$output" ]
  run grep -x "INSTALLED_BINDIR='/usr/bin'.*" "$D/usr/libexec/migbed/migbed-qemu"
  [ "$status" -eq 0 ]
}

@test "the installed migbed runs the quick tour outside the repository (datadir scenarios, --hw cx7-bf3)" {
  mkdir -p "$BATS_TEST_TMPDIR/elsewhere"
  cd "$BATS_TEST_TMPDIR/elsewhere"
  export PATH="$D/usr/bin:$PATH"
  [ "$(command -v migbed)" = "$D/usr/bin/migbed" ]
  run migbed run
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "migbed: verdict=pass status=completed cause=NONE side=-" ]
  run migbed run --chunk-size 64M --dst-chunk-size 1M            # the mismatch: a named failure
  [ "$status" -eq 1 ]
  [ "${lines[-1]}" = "migbed: verdict=fail status=failed cause=REMOTE_ACCESS_ERROR side=src" ]
  run migbed run --chunk-size 64M --dst-chunk-size 1M --protocol negotiated
  [ "$status" -eq 0 ]
  s=$D/usr/share/migbed/scenarios
  run migbed run "$s/model-hotcold-64m-pin-all.scn" --json r.json --events ev.log
  [ "$status" -eq 0 ]
  [ -s r.json ]
  [ -s ev.log ]
  # a scenario naming a file of the installed data folder (dst-layout = ../data/layouts/...)
  run migbed run "$s/config-dst-small-ram.scn" --quiet
  [ "$status" -eq 0 ]
  run migbed run --hw cx7-bf3 --quiet
  [ "$status" -eq 0 ]
  run migbed hw list
  [ "$status" -eq 0 ]
  [[ "$output" == *"cx7-bf3"*"$D/usr/share/migbed/hw/cx7-bf3.hw"* ]]
  run migbed trace gen --pattern rand-set --guest 64M --duration-ms 100 --seed 1 -o g.trace.zst
  [ "$status" -eq 0 ]
  run migbed trace stat g.trace.zst --json
  [ "$status" -eq 0 ]
  run migbed causes REMOTE_ACCESS_ERROR
  [ "$status" -eq 0 ]
}

@test "MIGBED_DATADIR moves the data folder; without it a binary elsewhere finds no profile" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cp "$D/usr/bin/migbed" "$BATS_TEST_TMPDIR/bin/"
  cd "$BATS_TEST_TMPDIR"
  run "$BATS_TEST_TMPDIR/bin/migbed" run --hw cx7-bf3 --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"no profile 'cx7-bf3'"* ]]
  MIGBED_DATADIR=$D/usr/share/migbed run "$BATS_TEST_TMPDIR/bin/migbed" run --hw cx7-bf3 --quiet
  [ "$status" -eq 0 ]
}

@test "the installed helpers find the installed migbed (on PATH here; INSTALLED_BINDIR when there)" {
  cd "$BATS_TEST_TMPDIR"
  PATH="$D/usr/bin:$PATH" run "$D/usr/libexec/migbed/migbed-qemu" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"(\$MIGBED, default $D/usr/bin/migbed)"* ]]
  run "$D/usr/libexec/migbed/detect" --help
  [ "$status" -eq 0 ]
  run "$D/usr/libexec/migbed/rxe-vm" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"usage: rxe-vm"* ]]
}

@test "a prefix install without DESTDIR: the compiled-in datadir, and the helpers' INSTALLED_BINDIR" {
  p=$BATS_TEST_TMPDIR/p
  # bindir and datadir apart, so neither BIN/../hw nor BIN/../share/migbed/hw holds the profiles
  run mk install prefix="$p" bindir="$p/tools" datadir="$p/data"
  echo "$output"
  [ "$status" -eq 0 ]
  cd "$BATS_TEST_TMPDIR"
  run "$p/tools/migbed" run --hw cx7-bf3 --quiet
  echo "$output"
  [ "$status" -eq 0 ]
  run env PATH=/usr/bin:/bin "$p/libexec/migbed/migbed-qemu" --help
  [[ "$output" == *"(\$MIGBED, default $p/tools/migbed)"* ]]
  run mk uninstall prefix="$p" bindir="$p/tools" datadir="$p/data"
  [ "$status" -eq 0 ]
  run find "$p" -type f
  [ -z "$output" ]
}

@test "man pages render (man -l), the completion file sources in bash and completes" {
  if command -v man >/dev/null; then
    run env MANWIDTH=100 man -l "$D/usr/share/man/man1/migbed.1"
    [ "$status" -eq 0 ]
    [[ "$output" == *"migbed trace gen"* ]]
    [[ "$output" == *"--chunk-size SIZE"* ]]
    run env MANWIDTH=100 man -l "$D/usr/share/man/man5/migbed-trace.5"
    [ "$status" -eq 0 ]
    [[ "$output" == *"page-size SIZE"* ]]
  fi
  c=$D/usr/share/bash-completion/completions/migbed
  comp() { bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _migbed; echo "${COMPREPLY[*]}"' _ "$c" "$@"; }
  [ "$(comp migbed ru)" = run ]
  [ "$(comp migbed trace '')" = "gen stat check" ]
  [ "$(comp migbed run --backend '')" = "model verbs" ]
  [ "$(comp migbed run --chunk-si)" = "--chunk-size" ]
  [ "$(comp migbed hw l)" = list ]
  run bash -c ". '$c' && complete -p migbed"
  [ "$output" = "complete -F _migbed migbed" ]
}

@test "the man page and the completion are the binary's (made at build time): every option-table key is in both" {
  # deterministic: the completion made again from the same binary is the same text
  run diff <("$ROOT/scripts/gen-completion.sh" "$B/migbed") "$D/usr/share/bash-completion/completions/migbed"
  [ "$status" -eq 0 ]
  # every key of the option table is in both: man's .TP items, the completion's run options
  keys=$("$B/migbed" options | awk '/^  --/ { print $1 }' | sort)
  [ "$(wc -l <<<"$keys")" -gt 40 ]
  run comm -23 <(echo "$keys") <(sed -n 's/^\\fB\(\\-\\-[a-z0-9\\-]*\)\\fR.*/\1/p' "$D/usr/share/man/man1/migbed.1" | sed 's/\\-/-/g' | sort)
  [ -z "$output" ]
  run comm -23 <(echo "$keys") <(grep '^    "run")' "$D/usr/share/bash-completion/completions/migbed" | tr -d '"' | tr ' ' '\n' | sort)
  [ -z "$output" ]
}

@test "make uninstall removes exactly what make install wrote" {
  run mk uninstall DESTDIR="$D" PREFIX=/usr
  [ "$status" -eq 0 ]
  run find "$D" -type f
  [ -z "$output" ]
  run find "$D" -name '*migbed*'
  [ -z "$output" ]
}

@test "a plain make never runs apt-get: missing packages stop it with the apt-get line (make deps installs)" {
  fake=$BATS_TEST_TMPDIR/fake
  mkdir -p "$fake"
  printf '#!/bin/sh\nexit 1\n' >"$fake/dpkg-query"                         # nothing is installed
  printf '#!/bin/sh\necho 0\n' >"$fake/id"                                  # as root
  printf '#!/bin/sh\necho "$@" >>"%s/apt-get.called"\nexit 1\n' "$BATS_TEST_TMPDIR" >"$fake/apt-get"
  chmod +x "$fake"/*
  run env PATH="$fake:$PATH" make --no-print-directory -C "$ROOT" BUILD="$BATS_TEST_TMPDIR/b"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"migbed: missing Debian packages:"*"(or: make deps)"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/apt-get.called" ]
  [ ! -e "$BATS_TEST_TMPDIR/b/migbed" ]
  # the fakes work: make deps does run (the fake) apt-get
  run env PATH="$fake:$PATH" make --no-print-directory -C "$ROOT" BUILD="$BATS_TEST_TMPDIR/b" deps
  [ "$status" -ne 0 ]
  [ -s "$BATS_TEST_TMPDIR/apt-get.called" ]
}
