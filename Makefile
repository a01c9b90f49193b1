# SPDX-License-Identifier: MIT
# migbed - deterministic simulation and fault-injection test bed for RDMA live migration.
#
#   make               build build/migbed and build/libmigbed.a
#   make check         every test: cmocka unit tests, Bats (model lane), verbs lane (native or VM)
#   make bench         benchmarks (ratios, peak memory), results in build/bench/
#   make check-asan    unit tests + Bats (model lane) on an ASan+UBSan build (build-asan/)
#   make check-asan-ci the same build: unit tests, fuzz replays, the Bats files of bad input and runs (CI)
#   make check-valgrind  migbed's commands under valgrind memcheck (scripts/check-valgrind.sh)
#   make fuzz FUZZ_SECONDS=N  every fuzz/ harness under libFuzzer (clang, build-fuzz/), N s each
#   make fuzz FUZZ_SAN=none   the same searching without ASan/UBSan (build-fuzz-fast/), new inputs replayed under them
#   make coverage      whole suite on an instrumented build: lcov + HTML report, error-path map (build-cov/coverage/)
#   make coverage-check  fail on a cause no test produces or coverage under coverage/thresholds
#   make install PREFIX=/usr/local [DESTDIR=...]   GNU layout (bindir, libexecdir/migbed, datadir/migbed,
#                      docdir, mandir, bash completion); make uninstall removes exactly those files
#   make man completion  build/man/migbed.1, migbed-trace.5, build/completion/migbed (from the binary)
#   make deps          install missing Debian packages (root) or print the apt-get line; a plain make
#                      only checks them (never runs apt-get); make run installs them as make deps does
#   make V=1           show the commands
#
# Sources are found by wildcard: every vocab/ sim/ transport/ faults/ run/ cli/ *.c is part of the
# build; files named *_test.c are cmocka unit tests, one binary each.

BUILD   ?= build
PREFIX  ?= /usr/local
# GNU installation directories (override any on the command line; DESTDIR stages a package)
prefix        ?= $(PREFIX)
exec_prefix   ?= $(prefix)
bindir        ?= $(exec_prefix)/bin
libexecdir    ?= $(exec_prefix)/libexec
datarootdir   ?= $(prefix)/share
datadir       ?= $(datarootdir)
docdir        ?= $(datarootdir)/doc/migbed
mandir        ?= $(datarootdir)/man
pkgdatadir     = $(datadir)/migbed
pkglibexecdir  = $(libexecdir)/migbed
bashcompdir   ?= $(datadir)/bash-completion/completions
CC      ?= cc
V       ?= 0
Q        = $(if $(filter 1,$(V)),,@)

# The pkg-config flags are asked for only once the packages are there: $(BUILD)/pkg.mk is made
# after $(BUILD)/.deps-ok (scripts/deps.sh, which installs them as root), and GNU make, having
# remade an included makefile, reads everything again with the flags in it. (Asking pkg-config
# while parsing ran it before deps.sh: on a fresh machine the first build linked without
# -libverbs -lrdmacm -lzstd.) Goals that build nothing don't need it and don't install anything.
PKGS     = libibverbs librdmacm libzstd libxxhash jansson
NO_PKG_GOALS = clean deps coverage coverage-check check-asan check-asan-ci fuzz uninstall
ifneq ($(if $(MAKECMDGOALS),$(filter-out $(NO_PKG_GOALS),$(MAKECMDGOALS)),all),)
include $(BUILD)/pkg.mk
endif

WARN     = -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion \
           -Wstrict-prototypes -Wmissing-prototypes -Wvla
CFLAGS  ?= -O2 -g
CPPFLAGS += -D_GNU_SOURCE -I. $(PKG_CFLAGS)
ALL_CFLAGS = -std=c11 $(WARN) $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  += $(PKG_LIBS) -lm

LIB_DIRS = vocab sim transport faults run

# The build id of a run's result (run/run.h, run_build_id): the commit, "-dirty" when the
# tree differs from it; "unknown" outside a git checkout. Plumbing only (describe --dirty
# would refresh, i.e. write, the index).
BUILD_ID := $(shell { git describe --always 2>/dev/null || echo unknown; } | tr -d '\n'; \
              git diff-index --quiet HEAD -- 2>/dev/null || { git rev-parse -q --verify HEAD >/dev/null 2>&1 && echo -dirty; })
$(BUILD)/obj/run/run.o: CPPFLAGS += -DMIGBED_BUILD_ID='"$(BUILD_ID)"'

LIB_SRC  = $(filter-out %_test.c,$(wildcard $(addsuffix /*.c,$(LIB_DIRS))))
CLI_SRC  = $(filter-out %_test.c,$(wildcard cli/*.c))
TEST_SRC = $(wildcard $(addsuffix /*_test.c,$(LIB_DIRS) cli))

LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  = $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN = $(TEST_SRC:%.c=$(BUILD)/test/%)

.PHONY: all run deps check check-asan check-asan-ci check-valgrind unit bats verbs bench coverage coverage-check \
        install uninstall man completion clean fuzz fuzzers fuzz-replay FORCE
all: $(BUILD)/migbed

# The main job on a default: generate a small rand-set trace, migrate it through QEMU's RDMA
# protocol on the simulated HCA, verify the destination. (Installs missing packages as root.)
run: $(BUILD)/migbed
	$(BUILD)/migbed run $(ARGS)

deps:
	$(Q)scripts/deps.sh build

# Only `make deps` and `make run` (the README's first command) install packages; any other goal
# checks them and, when some are missing, prints the apt-get line and stops (scripts/deps.sh --check).
DEPS_MODE = $(if $(filter run deps,$(MAKECMDGOALS)),,--check)
$(BUILD)/.deps-ok: scripts/deps.sh
	$(Q)scripts/deps.sh $(DEPS_MODE) build
	$(Q)mkdir -p $(BUILD) && touch $@

# PKG_CFLAGS, PKG_LIBS (libibverbs librdmacm libzstd libxxhash jansson), CMOCKA_CFLAGS, CMOCKA_LIBS. A package
# whose .pc is missing is an error here, not an empty flag and a link error later.
$(BUILD)/pkg.mk: $(BUILD)/.deps-ok Makefile
	$(if $(Q),@echo "  GEN     $@")
	$(Q)pkg-config --print-errors --exists $(PKGS) cmocka \
	  || { echo "migbed: pkg-config does not find $(PKGS) cmocka (make deps installs them)" >&2; exit 1; }
	$(Q){ echo "# made by make from pkg-config; remade when $(BUILD)/.deps-ok or the Makefile changes"; \
	  echo "PKG_CFLAGS := $$(pkg-config --cflags $(PKGS))"; \
	  echo "PKG_LIBS := $$(pkg-config --libs $(PKGS))"; \
	  echo "CMOCKA_CFLAGS := $$(pkg-config --cflags cmocka)"; \
	  echo "CMOCKA_LIBS := $$(pkg-config --libs cmocka)"; } >$@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: %.c $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# The installed data folder (hw/, scenarios/) is compiled into run/hw.o; $(BUILD)/datadir holds it
# and is rewritten only when it changes, so a new datadir (or PREFIX) rebuilds that one object.
$(BUILD)/obj/run/hw.o: CPPFLAGS += -DMIGBED_DATADIR='"$(pkgdatadir)"'
$(BUILD)/obj/run/hw.o: $(BUILD)/datadir
$(BUILD)/datadir: FORCE
	@mkdir -p $(BUILD)
	@echo '$(pkgdatadir)' | cmp -s - $@ || echo '$(pkgdatadir)' >$@

$(BUILD)/libmigbed.a: $(LIB_OBJ)
	$(if $(Q),@echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/migbed: $(CLI_OBJ) $(BUILD)/libmigbed.a
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libmigbed.a $(LDLIBS)

# Unit tests: cli/*_test.c may test CLI helpers, so they link the CLI objects minus main.
$(BUILD)/test/%: %.c $(BUILD)/libmigbed.a $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ))
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  TEST-CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(CMOCKA_CFLAGS) $(ALL_CFLAGS) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< \
	    $(if $(filter cli/%,$<),$(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ))) \
	    $(BUILD)/libmigbed.a $(CMOCKA_LIBS) $(LDLIBS)

unit: $(TEST_BIN)
bats: $(BUILD)/migbed

# Fuzz harnesses (fuzz/fuzz_NAME.c, docs/fuzzing.md). Built with $(CC) as plain binaries with
# fuzz/replay.c's main(), $(BUILD)/fuzz/NAME replays fuzz/corpus/NAME and fuzz/regress/NAME once
# (one TAP line; part of `make check`, no clang needed). `make fuzz` builds them with clang and
# libFuzzer in $(FUZZ_BUILD) and runs each for FUZZ_SECONDS (scripts/fuzz.sh; FUZZ_ONLY="a b"
# picks harnesses).
FUZZ_SRC    = $(wildcard fuzz/fuzz_*.c)
FUZZ_NAMES  = $(FUZZ_SRC:fuzz/fuzz_%.c=%)
FUZZ_REPLAY = $(FUZZ_NAMES:%=$(BUILD)/fuzz/%)
FUZZ_BIN    = $(FUZZ_NAMES:%=$(BUILD)/fuzzer/%)
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
# (clang's -Wstring-conversion flags sim/prng.c's assert(!"..."), gcc's idiom: off here)
FUZZ_CFLAGS = -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
              -fno-omit-frame-pointer
# FUZZ_SAN=none: search with a throughput build without ASan/UBSan (libFuzzer's coverage only,
# in $(FUZZ_FAST_BUILD)), then replay every input it added to the work corpus with the
# ASan+UBSan build above (scripts/fuzz.sh, FUZZ_REPLAY_BUILD); the work corpora, crashes and
# logs stay in $(FUZZ_BUILD). FUZZ_SAN=asan (the default) searches with the sanitizer build.
FUZZ_SAN ?= asan
FUZZ_FAST_BUILD ?= build-fuzz-fast
FUZZ_FAST_CFLAGS = -O2 -g -fsanitize=fuzzer-no-link
FUZZ_DEPS   = fuzz/common.c fuzz/fuzz.h $(BUILD)/libmigbed.a $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ))
FUZZ_LINK   = fuzz/common.c $(filter-out $(BUILD)/obj/cli/main.o,$(CLI_OBJ)) $(BUILD)/libmigbed.a $(LDLIBS)

$(BUILD)/fuzz/%: fuzz/fuzz_%.c fuzz/replay.c $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  FUZZ-CC $<")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -DFUZZ_NAME='"$*"' $(LDFLAGS) -o $@ $< fuzz/replay.c $(FUZZ_LINK)

$(BUILD)/fuzzer/%: fuzz/fuzz_%.c $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  FUZZER  $<")
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $< $(FUZZ_LINK)

fuzz-replay: $(FUZZ_REPLAY)
fuzzers: $(FUZZ_BIN)

fuzz:
	$(Q)command -v clang >/dev/null || { echo "make fuzz: needs clang with libFuzzer (Debian: apt-get install clang)" >&2; exit 2; }
	$(Q)case '$(FUZZ_SAN)' in asan|none) ;; *) echo "make fuzz: FUZZ_SAN='$(FUZZ_SAN)': asan or none" >&2; exit 2 ;; esac
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang CFLAGS='$(FUZZ_CFLAGS)' \
	  EXTRA_CFLAGS=-Wno-string-conversion fuzzers
ifeq ($(FUZZ_SAN),none)
	$(Q)$(MAKE) --no-print-directory BUILD=$(FUZZ_FAST_BUILD) CC=clang CFLAGS='$(FUZZ_FAST_CFLAGS)' \
	  EXTRA_CFLAGS=-Wno-string-conversion fuzzers
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_SEARCH_BUILD=$(FUZZ_FAST_BUILD) \
	  scripts/fuzz.sh $(FUZZ_BUILD) $(or $(FUZZ_ONLY),$(FUZZ_NAMES))
else
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh $(FUZZ_BUILD) $(or $(FUZZ_ONLY),$(FUZZ_NAMES))
endif

# The one test command: unit + fuzz corpus replay + Bats (model) + verbs lane; prints "N passed,
# N failed".
check: $(BUILD)/migbed $(TEST_BIN) $(FUZZ_REPLAY)
	$(Q)BUILD=$(BUILD) scripts/check.sh $(TEST_BIN) $(FUZZ_REPLAY)

# Sanitizer lane: the same unit tests and model Bats lane on an AddressSanitizer +
# UndefinedBehaviorSanitizer build in its own folder; any finding (a UBSan one included:
# -fno-sanitize-recover) aborts the binary, so the test that ran it fails. LeakSanitizer is on;
# an allocation too large for ASan returns NULL as glibc's does (the tests check that path).
# The binaries run ~3x slower: the tests' bounds are scaled by 3 unless MIGBED_TEST_SCALE is set.
ASAN_BUILD ?= build-asan
ASAN_CFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
check-asan:
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 MIGBED_SKIP_VERBS=1 \
	  MIGBED_TEST_SCALE=$${MIGBED_TEST_SCALE:-3} \
	  $(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CFLAGS='$(ASAN_CFLAGS)' check

# The CI part of it (.ci/run): the unit tests, every fuzz corpus and regression input, and the
# Bats files and scenarios that feed migbed bad input and run and judge migrations (below), on
# the same ASan+UBSan build: 668 tests, 4.9 min of CPU (README, Sanitizers). The whole lane stays `make check-asan`.
ASAN_CI_BATS = bats/bad-input.bats bats/faults.bats bats/explain.bats bats/trace-tools.bats bats/bundle.bats
ASAN_CI_SCN  = config-*.scn fault-msg-*.scn model-*-1m.scn model-*-1m-pin-all.scn neg-*.scn profile-*.scn
check-asan-ci:
	$(Q)MIGBED_BATS_ONLY='$(ASAN_CI_BATS)' MIGBED_SCN_GLOB='$(ASAN_CI_SCN)' $(MAKE) --no-print-directory check-asan

check-valgrind: $(BUILD)/migbed
	$(Q)BUILD=$(BUILD) scripts/check-valgrind.sh

# scripts/bench-digest.c: the memory digest side by side with the hash it replaced
$(BUILD)/bench-digest: scripts/bench-digest.c $(BUILD)/libmigbed.a
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Wno-missing-prototypes $(LDFLAGS) -o $@ $< $(BUILD)/libmigbed.a $(LDLIBS)

bench: $(BUILD)/migbed $(BUILD)/bench-digest
	$(Q)BUILD=$(BUILD) scripts/bench.sh

# Coverage has its own build folder (wiped and rebuilt with --coverage); see coverage/run.sh.
COV_BUILD ?= build-cov
coverage:
	$(Q)BUILD=$(COV_BUILD) MAKE=$(MAKE) coverage/run.sh

coverage-check:
	$(Q)BUILD=$(COV_BUILD) coverage/check.sh

# --- install ----------------------------------------------------------------------------------
# No public library: libmigbed.a is the build's internal archive (its headers include each other
# by repository path and promise no stable interface), so no headers, .a or .pc are installed.
# The helpers are installed flat in $(pkglibexecdir); make install writes the installed bindir
# into them (INSTALLED_BINDIR=...) so that they find the installed migbed.
HELPERS   = topologies/detect topologies/setup topologies/clean topologies/vm/rxe-vm \
            topologies/vm/guest-init.sh topologies/qemu/migbed-qemu topologies/qemu/qemu-lib.bash \
            topologies/qemu/capture-stream.sh scripts/deps.sh
SCENARIOS = $(wildcard bats/scenarios/*.scn) $(wildcard bats/scenarios/*.trace.zst)
LAYOUTS   = $(wildcard bats/data/layouts/*.trace)
HWFILES   = $(wildcard hw/*.hw)
DOCS      = README.md LICENSE $(wildcard docs/*.md)
DOCDATA   = $(wildcard docs/data/*) $(wildcard docs/img/*)
MAN1      = $(BUILD)/man/migbed.1
MAN5      = $(BUILD)/man/migbed-trace.5
COMPLETION = $(BUILD)/completion/migbed

man: $(MAN1) $(MAN5)
completion: $(COMPLETION)
$(MAN1): $(BUILD)/migbed scripts/gen-man.sh
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  GEN     $@")
	$(Q)scripts/gen-man.sh migbed.1 $(BUILD)/migbed >$@.tmp && mv $@.tmp $@
$(MAN5): docs/trace-format.md scripts/gen-man.sh scripts/md2man.awk $(BUILD)/migbed
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  GEN     $@")
	$(Q)scripts/gen-man.sh migbed-trace.5 $(BUILD)/migbed docs/trace-format.md >$@.tmp && mv $@.tmp $@
$(COMPLETION): $(BUILD)/migbed scripts/gen-completion.sh
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  GEN     $@")
	$(Q)scripts/gen-completion.sh $(BUILD)/migbed >$@.tmp && mv $@.tmp $@

# the installed files, one per line, as DESTDIR-less paths (make uninstall removes exactly these)
INSTALLED = $(bindir)/migbed \
            $(addprefix $(pkglibexecdir)/,$(notdir $(HELPERS))) \
            $(addprefix $(pkgdatadir)/scenarios/,$(notdir $(SCENARIOS))) \
            $(addprefix $(pkgdatadir)/data/layouts/,$(notdir $(LAYOUTS))) \
            $(addprefix $(pkgdatadir)/hw/,$(notdir $(HWFILES))) \
            $(addprefix $(docdir)/,$(notdir $(DOCS))) \
            $(addprefix $(docdir)/data/,$(notdir $(wildcard docs/data/*))) \
            $(addprefix $(docdir)/img/,$(notdir $(wildcard docs/img/*))) \
            $(mandir)/man1/migbed.1 $(mandir)/man5/migbed-trace.5 $(bashcompdir)/migbed
INSTALLED_DIRS = $(pkglibexecdir) $(pkgdatadir)/scenarios $(pkgdatadir)/data/layouts $(pkgdatadir)/data \
                 $(pkgdatadir)/hw $(pkgdatadir) $(docdir)/data $(docdir)/img $(docdir)

install: $(BUILD)/migbed $(MAN1) $(MAN5) $(COMPLETION)
	$(Q)install -d $(DESTDIR)$(bindir) $(DESTDIR)$(pkglibexecdir) $(DESTDIR)$(pkgdatadir)/scenarios \
	  $(DESTDIR)$(pkgdatadir)/data/layouts $(DESTDIR)$(pkgdatadir)/hw $(DESTDIR)$(docdir)/data \
	  $(DESTDIR)$(docdir)/img $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man5 $(DESTDIR)$(bashcompdir)
	$(Q)install -m 755 $(BUILD)/migbed $(DESTDIR)$(bindir)/migbed
	$(Q)for f in $(HELPERS); do \
	  sed "s|^INSTALLED_BINDIR=''.*|INSTALLED_BINDIR='$(bindir)'|" $$f >$(DESTDIR)$(pkglibexecdir)/$${f##*/}.tmp && \
	  chmod $$(stat -c %a $$f) $(DESTDIR)$(pkglibexecdir)/$${f##*/}.tmp && \
	  mv $(DESTDIR)$(pkglibexecdir)/$${f##*/}.tmp $(DESTDIR)$(pkglibexecdir)/$${f##*/} || exit 1; done
	$(Q)install -m 644 $(SCENARIOS) $(DESTDIR)$(pkgdatadir)/scenarios/
	$(Q)install -m 644 $(LAYOUTS) $(DESTDIR)$(pkgdatadir)/data/layouts/
	$(Q)install -m 644 $(HWFILES) $(DESTDIR)$(pkgdatadir)/hw/
	$(Q)install -m 644 $(DOCS) $(DESTDIR)$(docdir)/
	$(Q)install -m 644 $(wildcard docs/data/*) $(DESTDIR)$(docdir)/data/
	$(Q)install -m 644 $(wildcard docs/img/*) $(DESTDIR)$(docdir)/img/
	$(Q)install -m 644 $(MAN1) $(DESTDIR)$(mandir)/man1/migbed.1
	$(Q)install -m 644 $(MAN5) $(DESTDIR)$(mandir)/man5/migbed-trace.5
	$(Q)install -m 644 $(COMPLETION) $(DESTDIR)$(bashcompdir)/migbed

# removes the files install writes and the folders that are migbed's own (when empty); shared
# folders (bin, man1, completions) stay
uninstall:
	$(Q)for f in $(INSTALLED); do rm -f "$(DESTDIR)$$f" || exit 1; done
	$(Q)for d in $(INSTALLED_DIRS); do [ ! -d "$(DESTDIR)$$d" ] || rmdir "$(DESTDIR)$$d" || exit 1; done

clean:
	rm -rf $(BUILD) build-cov $(ASAN_BUILD) $(FUZZ_BUILD) $(FUZZ_FAST_BUILD)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
