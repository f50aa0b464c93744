# Cloister — one non-recursive Makefile, everything built under $(BUILD).
#
#   make                  build bin/cloister-supervisor, bin/cloister-shim and bin/cloister-oci-hook
#   make check            install missing packages, build, run every test tier this machine can
#   make run              install missing packages, build, run the main job on the built-in config
#   make bench            print performance ratios measured in one run (ONLY=web: one section)
#   make fuzz             run every libFuzzer target for FUZZ_SECONDS (default 60) each
#   make format-check     clang-format --dry-run over our sources
#   make SANITIZE=address,undefined check     the same suite under ASan and UBSan
#   make tsan-check       the tests of the supervisor's threads under ThreadSanitizer
#   make V=1 ...          show full command lines

SANITIZE ?=
BUILD    ?= build$(if $(SANITIZE),/sanitize-$(subst $(comma),-,$(SANITIZE)))
comma    := ,
sanitizers = $(subst $(comma), ,$(SANITIZE))
# ThreadSanitizer cannot share a process with ASan or LSan (both own the same shadow memory).
ifneq ($(filter thread,$(sanitizers)),)
ifneq ($(filter address leak,$(sanitizers)),)
$(error SANITIZE=$(SANITIZE): thread cannot be combined with address or leak; run them apart)
endif
TSAN := 1
endif

CC       ?= cc
CLANG    ?= clang
PKG      ?= pkg-config
FUZZ_SECONDS ?= 60
# `make check` also runs each fuzz target briefly, as a smoke test of the harnesses.
CHECK_FUZZ_SECONDS ?= 10

ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-8s %s\n' $(1) $(2);
endif

# Libraries, always through pkg-config. Recursive (=) on purpose: evaluated when a recipe runs,
# which is after scripts/install-deps on a fresh machine.
CORE_PKGS  := libcjson yaml-0.1 libpcre2-8 libmicrohttpd
KERNEL_PKGS:= libseccomp libbpf
# Loaded with dlopen(3) only while a mode needs them (base/dynlib.h): programs get their
# headers, not their -l; only a test that calls them itself links them.
NET_PKGS   := libnftables libnl-3.0 libnl-route-3.0
TEST_PKGS  := cmocka
pkg_cflags = $(shell $(PKG) --cflags $(1))
pkg_libs   = $(shell $(PKG) --libs $(1))

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -Werror
HARDEN := -fstack-protector-strong -fPIE
ifeq ($(SANITIZE),)
OPT := -O2 -g -D_FORTIFY_SOURCE=2
else
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif
CPPFLAGS_ALL = -I. -I$(BUILD)/gen -D_GNU_SOURCE
CFLAGS_ALL   = -std=gnu11 $(OPT) $(WARN) $(HARDEN) -MMD -MP \
	$(call pkg_cflags,$(CORE_PKGS) $(KERNEL_PKGS) $(NET_PKGS)) $(CFLAGS)
LDFLAGS_ALL  = -pie -Wl,-z,relro,-z,now $(if $(SANITIZE),-fsanitize=$(SANITIZE)) $(LDFLAGS)
LIBS_CORE    = $(call pkg_libs,$(CORE_PKGS))
LIBS_KERNEL  = $(call pkg_libs,$(KERNEL_PKGS))
LIBS_NET     = $(call pkg_libs,$(NET_PKGS))

# ---- sources --------------------------------------------------------------------------------
BASE_SRC       := $(sort $(wildcard base/*.c))
PROTOCOL_SRC   := $(sort $(wildcard protocol/*.c))
SUPERVISOR_SRC := $(sort $(filter-out supervisor/main.c,$(wildcard supervisor/*.c supervisor/*/*.c)))
NOTIFIER_SRC   := $(sort $(wildcard notifier/*.c))
OCI_SRC        := $(sort $(wildcard oci/*.c))
NETFILTER_SRC  := $(sort $(wildcard netfilter/*.c))
BPF_PROG_SRC   := $(sort $(wildcard bpf/*.bpf.c))
BPF_USER_SRC   := $(sort $(filter-out %.bpf.c,$(wildcard bpf/*.c)))
HOOK_SRC       := $(sort $(wildcard hook/*.c))
GEN_SRC        := $(BUILD)/gen/default_config.c $(BUILD)/gen/web_assets.c
DASHBOARD      := $(sort $(wildcard supervisor/web/dashboard/*))
# Tests mirror the folders: tests/unit/protocol/ links only protocol/ and base/, so the shim's
# libraries are tested on their own; tests/unit/supervisor/ links every library it needs.
UNIT_BASE      := $(sort $(wildcard tests/unit/base/test_*.c))
UNIT_PROTOCOL  := $(sort $(wildcard tests/unit/protocol/test_*.c))
UNIT_SUPERVISOR:= $(sort $(wildcard tests/unit/supervisor/test_*.c))
UNIT_NOTIFIER  := $(sort $(wildcard tests/unit/notifier/test_*.c))
UNIT_OCI       := $(sort $(wildcard tests/unit/oci/test_*.c))
UNIT_NETFILTER := $(sort $(wildcard tests/unit/netfilter/test_*.c))
UNIT_TESTS     := $(UNIT_BASE) $(UNIT_PROTOCOL) $(UNIT_SUPERVISOR) $(UNIT_NOTIFIER) $(UNIT_OCI) $(UNIT_NETFILTER)
# tests/kernel/: cmocka programs that drive the real kernel (root; they skip with the reason
# when a feature is absent). tests/integration/: shell tests of the built binaries.
KERNEL_TESTS   := $(sort $(wildcard tests/kernel/test_*.c))
INTEGRATION_TESTS := $(sort $(wildcard tests/integration/*.sh))
TEST_HELPERS   := $(sort $(wildcard tests/helpers/*.c))
FUZZ_PROTOCOL  := $(sort $(wildcard tests/fuzz/protocol/fuzz_*.c))
FUZZ_SUPERVISOR:= $(sort $(wildcard tests/fuzz/supervisor/fuzz_*.c))
FUZZ_NOTIFIER  := $(sort $(wildcard tests/fuzz/notifier/fuzz_*.c))
FUZZ_OCI       := $(sort $(wildcard tests/fuzz/oci/fuzz_*.c))
BENCH_SRC      := $(sort $(wildcard tests/bench/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

BASE_LIB       := $(BUILD)/lib/libcloister-base.a
PROTOCOL_LIB   := $(BUILD)/lib/libcloister-protocol.a
SUPERVISOR_LIB := $(BUILD)/lib/libcloister-supervisor.a
NOTIFIER_LIB   := $(BUILD)/lib/libcloister-notifier.a
OCI_LIB        := $(BUILD)/lib/libcloister-oci.a
NETFILTER_LIB  := $(BUILD)/lib/libcloister-netfilter.a
BPF_LIB        := $(BUILD)/lib/libcloister-bpf.a
BPF_SKELS      := $(patsubst bpf/%.bpf.c,$(BUILD)/gen/bpf/%.skel.h,$(BPF_PROG_SRC))
# Link order: users before what they use.
ALL_LIBS       := $(SUPERVISOR_LIB) $(NETFILTER_LIB) $(OCI_LIB) $(NOTIFIER_LIB) $(BPF_LIB) $(PROTOCOL_LIB) \
	$(BASE_LIB)
SUPERVISOR_BIN := $(BUILD)/bin/cloister-supervisor
SHIM_BIN       := $(BUILD)/bin/cloister-shim
HOOK_BIN       := $(BUILD)/bin/cloister-oci-hook
UNIT_BINS      := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_TESTS))
KERNEL_BINS    := $(patsubst tests/kernel/%.c,$(BUILD)/tests/kernel/%,$(KERNEL_TESTS))
HELPER_BINS    := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(TEST_HELPERS))
# Helpers built on our libraries (they link them all, as the supervisor does).
LIB_HELPER_BINS:= $(BUILD)/tests/helpers/nftunload
FUZZ_BINS      := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_PROTOCOL) $(FUZZ_SUPERVISOR) \
	$(FUZZ_NOTIFIER) $(FUZZ_OCI))
BENCH_BIN      := $(BUILD)/bench/bench_core

.PHONY: all check check-built tsan-check tsan-check-built unit test run bench fuzz fuzz-build format format-check clean deps
.DEFAULT_GOAL := all
# Keep intermediate objects (fuzz and test objects are only reached through pattern rules).
.SECONDARY:

all: $(SUPERVISOR_BIN) $(SHIM_BIN) $(HOOK_BIN)

# ---- generated ------------------------------------------------------------------------------
# The compiled-in default config: supervisor/policy/default-config.yaml as a C byte array.
$(BUILD)/gen/default_config.c: supervisor/policy/default-config.yaml scripts/embed
	$(call say,EMBED,$@)
	$(Q)mkdir -p $(@D)
	$(Q)scripts/embed cloister_default_config $< > $@.tmp && mv $@.tmp $@

# The dashboard (supervisor/web/dashboard/) as the table of supervisor/web/web_assets.h.
$(BUILD)/gen/web_assets.c: $(DASHBOARD) scripts/embed-assets
	$(call say,EMBED,$@)
	$(Q)mkdir -p $(@D)
	$(Q)scripts/embed-assets supervisor/web/dashboard > $@.tmp && mv $@.tmp $@

# ---- objects and libraries ------------------------------------------------------------------
$(BUILD)/obj/%.o: %.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -c $< -o $@

GEN_OBJ := $(BUILD)/obj/gen/default_config.o $(BUILD)/obj/gen/web_assets.o

$(BASE_LIB): $(call obj,$(BASE_SRC))
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(PROTOCOL_LIB): $(call obj,$(PROTOCOL_SRC))
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SUPERVISOR_LIB): $(call obj,$(SUPERVISOR_SRC)) $(GEN_OBJ)
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(NOTIFIER_LIB): $(call obj,$(NOTIFIER_SRC))
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OCI_LIB): $(call obj,$(OCI_SRC))
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(NETFILTER_LIB): $(call obj,$(NETFILTER_SRC))
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BPF_LIB): $(call obj,$(BPF_USER_SRC))
	$(call say,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# Objects that include generated headers must wait for them.
$(call obj,$(SUPERVISOR_SRC) supervisor/main.c): | $(GEN_SRC)
$(call obj,$(BPF_USER_SRC) $(SUPERVISOR_SRC) supervisor/main.c $(KERNEL_TESTS)): | $(BPF_SKELS)

$(SUPERVISOR_BIN): $(call obj,supervisor/main.c) $(ALL_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL)

# The OCI createRuntime hook (docker/README.md): a small program of its own, on protocol/ and
# the two modules it needs (oci/oci_state, notifier/fdpass).
$(HOOK_BIN): $(call obj,$(HOOK_SRC)) $(OCI_LIB) $(NOTIFIER_LIB) $(PROTOCOL_LIB) $(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE)

# ---- eBPF (libbpf CO-RE): vmlinux.h from the running kernel's BTF, skeletons into build/gen ---
# -g for BTF; the DWARF it also makes (vmlinux.h's types: 0.6 MB an object) is stripped
# before the skeleton embeds the object in the supervisor, where libbpf reads it at load.
LLVM_STRIP ?= llvm-strip
# The multiarch directory: a program built on the UAPI's <linux/bpf.h> (no CO-RE, so libbpf
# loads it without parsing the kernel's BTF) needs its <asm/types.h>.
BPF_MULTIARCH  := $(shell $(CC) -print-multiarch 2>/dev/null)
BPF_CLANG_FLAGS = -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD)/gen -I. \
	$(if $(BPF_MULTIARCH),-idirafter /usr/include/$(BPF_MULTIARCH)) \
	$(call pkg_cflags,libbpf) -Wall -Werror

$(BUILD)/gen/vmlinux.h:
	$(call say,BTF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/gen/vmlinux.h $(wildcard bpf/*.h)
	$(call say,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CLANG_FLAGS) -c $< -o $@.tmp
	$(Q)$(LLVM_STRIP) -g $@.tmp && mv $@.tmp $@

$(BUILD)/gen/bpf/%.skel.h: $(BUILD)/gen/bpf/%.bpf.o
	$(call say,SKEL,$@)
	$(Q)bpftool gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# ---- shim: one static binary, no runtime dependencies ----------------------------------------
# Built with musl-gcc (scripts/install-deps installs musl-tools) for a small binary; with the
# system compiler and glibc's libc.a when musl is missing. It links only the cJSON-free part of
# protocol/ and base/'s errors, and makes no NSS call (numeric addresses only), so glibc's static caveats do not
# apply either. Never sanitized: it must stay static.
SHIM_SRC          := $(sort $(wildcard shim/*.c))
SHIM_PROTOCOL_SRC := base/error.c protocol/frame.c protocol/message_exec.c protocol/address.c
SHIM_CC           ?= $(if $(shell command -v musl-gcc 2>/dev/null),musl-gcc,$(CC))
SHIM_CFLAGS        = -std=gnu11 -Os $(WARN) -fstack-protector-strong -ffunction-sections \
	-fdata-sections -D_GNU_SOURCE -I. -MMD -MP
shim_obj = $(patsubst %.c,$(BUILD)/shim-obj/%.o,$(1))

$(BUILD)/shim-obj/%.o: %.c
	$(call say,SHIMCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(SHIM_CC) $(SHIM_CFLAGS) -c $< -o $@

$(SHIM_BIN): $(call shim_obj,$(SHIM_SRC) $(SHIM_PROTOCOL_SRC))
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SHIM_CC) -static -Wl,--gc-sections -s -o $@ $^

# ---- unit tests (cmocka) --------------------------------------------------------------------
$(BUILD)/tests/base/%: $(BUILD)/obj/tests/unit/base/%.o $(PROTOCOL_LIB) $(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(call pkg_libs,$(TEST_PKGS))

$(BUILD)/tests/protocol/%: $(BUILD)/obj/tests/unit/protocol/%.o $(PROTOCOL_LIB) $(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(call pkg_libs,$(TEST_PKGS))

$(BUILD)/tests/supervisor/%: $(BUILD)/obj/tests/unit/supervisor/%.o $(SUPERVISOR_LIB) $(PROTOCOL_LIB) $(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(call pkg_libs,$(TEST_PKGS))

$(BUILD)/tests/notifier/%: $(BUILD)/obj/tests/unit/notifier/%.o $(NOTIFIER_LIB) $(PROTOCOL_LIB) $(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL) $(call pkg_libs,$(TEST_PKGS))

$(BUILD)/tests/oci/%: $(BUILD)/obj/tests/unit/oci/%.o $(OCI_LIB) $(NOTIFIER_LIB) $(PROTOCOL_LIB) \
		$(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(call pkg_libs,$(TEST_PKGS))

$(BUILD)/tests/netfilter/%: $(BUILD)/obj/tests/unit/netfilter/%.o $(NETFILTER_LIB) $(PROTOCOL_LIB) $(BASE_LIB)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(call pkg_libs,$(TEST_PKGS)) -lpthread

$(BUILD)/tests/kernel/%: $(BUILD)/obj/tests/kernel/%.o $(ALL_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL) $(LIBS_NET) $(call pkg_libs,$(TEST_PKGS)) -lpthread

# Helpers that embed a part of the supervisor (shim_*: the shim server with a test policy)
# link its libraries; make picks this rule over the next for them (shorter stem).
$(BUILD)/tests/helpers/shim_%: $(BUILD)/obj/tests/helpers/shim_%.o $(ALL_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL)

# Small programs the integration tests run inside sandboxes (exec tricks, TOCTOU racers).
$(BUILD)/tests/helpers/%: $(BUILD)/obj/tests/helpers/%.o
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ -lpthread

# They are fixtures, not code under test, and never sanitized: LeakSanitizer cannot run in a
# traced process, and a non-root sandbox traces every process (the ptrace exec backstop).
# Those that link our libraries are built as they are.
PLAIN_HELPER_BINS := $(filter-out $(BUILD)/tests/helpers/shim_% $(LIB_HELPER_BINS),$(HELPER_BINS))
$(PLAIN_HELPER_BINS): OPT := -O2 -g -D_FORTIFY_SOURCE=2
$(PLAIN_HELPER_BINS): LDFLAGS_ALL := -pie -Wl,-z,relro,-z,now $(LDFLAGS)

$(LIB_HELPER_BINS): $(BUILD)/tests/helpers/%: $(BUILD)/obj/tests/helpers/%.o $(ALL_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL) -lpthread

$(call obj,$(UNIT_TESTS) $(KERNEL_TESTS)): CFLAGS_ALL += $(call pkg_cflags,$(TEST_PKGS))

unit: $(UNIT_BINS)
	$(Q)$(TSAN_ENV) BUILD=$(BUILD) tests/run-tests $(UNIT_BINS)

# ---- ThreadSanitizer -------------------------------------------------------------------------
# Under SANITIZE=thread, tests/run-tests gives every process a report file of its own (in a
# directory of /tmp every user may write to: tests run the supervisor as nobody) and fails the
# test that left a finding. TSAN_OPTIONS of the caller come first; ours after them win:
#   second_deadlock_stack=1  both stacks of a lock-order report
# Nothing is suppressed: every report so far was a race fixed or the tool's own (see
# README.md, "Development").
TSAN_ENV = $(if $(TSAN),CLOISTER_TSAN=1 TSAN_OPTIONS='$(TSAN_OPTIONS) second_deadlock_stack=1')
# make tsan-check: the tests that run the supervisor's threads: the receiving thread of each
# seccomp listener (exec, connect, fs.ask opens, read before the lock while the CLI is served;
# serve's containers, one each) with the loop's under the one lock, its start and its end;
# the loop's lock itself; the threads of the unit tests of the HTTP server, the relay and the
# audit log's crash handler. 90 s from a clean tree on this two-core machine, the build
# included; .ci/run runs it.
TSAN_UNIT        = base/test_loop supervisor/test_relay supervisor/test_web supervisor/test_audit
TSAN_KERNEL      = test_proxy
TSAN_INTEGRATION = $(addprefix tests/integration/,run_exec_thread.sh run_stress.sh \
	run_write_ask.sh run_connattr.sh run_ask.sh run_lifecycle.sh oci_runc.sh serve_shim.sh \
	web_cancel.sh attack7_stall_open.sh)
TSAN_BINS = $(addprefix $(BUILD)/tests/,$(TSAN_UNIT)) $(addprefix $(BUILD)/tests/kernel/,$(TSAN_KERNEL))

tsan-check:
	$(Q)scripts/install-deps
	$(Q)$(MAKE) --no-print-directory $(JOBS) SANITIZE=thread tsan-check-built

tsan-check-built: $(SUPERVISOR_BIN) $(SHIM_BIN) $(HOOK_BIN) $(HELPER_BINS) $(TSAN_BINS)
	$(Q)$(if $(TSAN),,echo "tsan-check-built: run make tsan-check" >&2; exit 2;) \
	$(TSAN_ENV) BUILD=$(BUILD) SUPERVISOR=$(abspath $(SUPERVISOR_BIN)) \
		HELPERS=$(abspath $(BUILD)/tests/helpers) SHIM=$(abspath $(SHIM_BIN)) \
		tests/run-tests $(TSAN_BINS) $(TSAN_INTEGRATION)

# Run a subset: make test T='build/tests/kernel/test_notifier tests/integration/run_exec.sh'
test: $(SUPERVISOR_BIN) $(SHIM_BIN) $(HOOK_BIN) $(HELPER_BINS) $(filter $(BUILD)/%,$(T))
	$(Q)$(TSAN_ENV) BUILD=$(BUILD) SUPERVISOR=$(abspath $(SUPERVISOR_BIN)) HELPERS=$(abspath $(BUILD)/tests/helpers) \
		SHIM=$(abspath $(SHIM_BIN)) \
		tests/run-tests $(T)

# ---- check: every tier this machine can run -------------------------------------------------
# `check` first installs what is missing, then re-reads this Makefile so that pkg-config sees it.
# Without -j on the command line, build with every core: the README's `make check` should not
# take longer than it must.
JOBS = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc))

check:
	$(Q)scripts/install-deps
	$(Q)$(MAKE) --no-print-directory $(JOBS) check-built

CLI_TESTS := $(sort $(wildcard tests/cli/*.sh))

check-built: $(SUPERVISOR_BIN) $(SHIM_BIN) $(HOOK_BIN) $(BENCH_BIN) $(UNIT_BINS) $(KERNEL_BINS) $(HELPER_BINS) $(if $(SANITIZE),,fuzz-build)
	$(Q)$(TSAN_ENV) BUILD=$(BUILD) SUPERVISOR=$(abspath $(SUPERVISOR_BIN)) HELPERS=$(abspath $(BUILD)/tests/helpers) \
		SHIM=$(abspath $(SHIM_BIN)) \
		FUZZ_SECONDS=$(if $(SANITIZE),,$(CHECK_FUZZ_SECONDS)) \
		tests/run-tests $(UNIT_BINS) $(CLI_TESTS) $(KERNEL_BINS) $(INTEGRATION_TESTS) \
		$(if $(SANITIZE),,$(addprefix fuzz:,$(FUZZ_BINS)))

# ---- run: the main job on the built-in default config ---------------------------------------
run:
	$(Q)scripts/install-deps
	$(Q)$(MAKE) --no-print-directory $(JOBS) $(SUPERVISOR_BIN)
	$(SUPERVISOR_BIN) run -- $${SHELL:-/bin/sh}

deps:
	$(Q)scripts/install-deps

# ---- fuzz (libFuzzer, clang) ----------------------------------------------------------------
# Library code is built instrumented into static archives of its own, so a target pulls in only
# the objects it really uses.
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=gnu11 -g -O1 $(FUZZ_SAN) $(CPPFLAGS_ALL) -MMD -MP \
	$(call pkg_cflags,$(CORE_PKGS) $(KERNEL_PKGS))
fuzz_obj = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))

$(BUILD)/fuzz/obj/%.o: %.c
	$(call say,FUZZCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/obj/gen/%.o: $(BUILD)/gen/%.c
	$(call say,FUZZCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(call fuzz_obj,$(SUPERVISOR_SRC)): | $(GEN_SRC) $(BPF_SKELS)

$(BUILD)/fuzz/lib/libfuzz-base.a: $(call fuzz_obj,$(BASE_SRC))
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/lib/libfuzz-protocol.a: $(call fuzz_obj,$(PROTOCOL_SRC))
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/lib/libfuzz-supervisor.a: $(call fuzz_obj,$(SUPERVISOR_SRC)) $(BUILD)/fuzz/obj/gen/default_config.o
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/lib/libfuzz-notifier.a: $(call fuzz_obj,$(NOTIFIER_SRC))
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
$(BUILD)/fuzz/lib/libfuzz-oci.a: $(call fuzz_obj,$(OCI_SRC))
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

$(BUILD)/fuzz/notifier/%: $(BUILD)/fuzz/obj/tests/fuzz/notifier/%.o \
		$(BUILD)/fuzz/lib/libfuzz-notifier.a $(BUILD)/fuzz/lib/libfuzz-protocol.a \
		$(BUILD)/fuzz/lib/libfuzz-base.a
	$(call say,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL)

$(BUILD)/fuzz/oci/%: $(BUILD)/fuzz/obj/tests/fuzz/oci/%.o $(BUILD)/fuzz/lib/libfuzz-oci.a \
		$(BUILD)/fuzz/lib/libfuzz-protocol.a $(BUILD)/fuzz/lib/libfuzz-base.a
	$(call say,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS_CORE)

$(BUILD)/fuzz/protocol/%: $(BUILD)/fuzz/obj/tests/fuzz/protocol/%.o $(BUILD)/fuzz/lib/libfuzz-protocol.a \
		$(BUILD)/fuzz/lib/libfuzz-base.a
	$(call say,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS_CORE)

$(BUILD)/fuzz/supervisor/%: $(BUILD)/fuzz/obj/tests/fuzz/supervisor/%.o \
		$(BUILD)/fuzz/lib/libfuzz-supervisor.a $(BUILD)/fuzz/lib/libfuzz-protocol.a \
		$(BUILD)/fuzz/lib/libfuzz-base.a
	$(call say,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL)

fuzz-build: $(FUZZ_BINS)

# Runs every target for FUZZ_SECONDS, each seeded from tests/fuzz/corpus/<target>/; new inputs
# go to $(BUILD)/fuzz/corpus/<target>/ so the committed corpus stays small.
fuzz: $(FUZZ_BINS)
	$(Q)BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run-tests $(addprefix fuzz:,$(FUZZ_BINS))

# ---- bench ----------------------------------------------------------------------------------
$(BENCH_BIN): $(call obj,$(BENCH_SRC)) $(ALL_LIBS)
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CORE) $(LIBS_KERNEL) -lpthread

# The programs section compiles a copy of these sources with the project's own flags
# (BENCH_SOURCES, BENCH_CFLAGS) and runs ./configure of a project made with autoconf/automake.
bench: $(BENCH_BIN) $(SUPERVISOR_BIN) $(SHIM_BIN) $(HELPER_BINS)
	$(Q)BENCH_ONLY=$(ONLY) SUPERVISOR=$(abspath $(SUPERVISOR_BIN)) \
		HELPERS=$(abspath $(BUILD)/tests/helpers) SHIM=$(abspath $(SHIM_BIN)) \
		BENCH_SOURCES=$(CURDIR) BENCH_CFLAGS='$(CPPFLAGS_ALL) $(CFLAGS_ALL)' $(BENCH_BIN)

# ---- formatting -----------------------------------------------------------------------------
FORMAT_SRC = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' \) -print)

format-check:
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRC)
	@echo "format-check: ok"

format:
	$(Q)clang-format -i $(FORMAT_SRC)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj $(BUILD)/fuzz/obj $(BUILD)/shim-obj -name '*.d' 2>/dev/null)
