/* Crucible's driver for one x86-64 function: trusted code, compiled by the host and linked
 * statically with a candidate's object (its symbols renamed `cand.*`, its entry reached as
 * `crucible_cand_entry`) and the task's -O3 baseline (`base.*`, `crucible_base_entry`).
 *
 * It reads the host's input file (argv[1]: the cases, written by verifiers/x86asm/cases.py),
 * maps one arena per pointer parameter between two inaccessible guard pages, installs its
 * seccomp filter, says it started (stderr), and only then calls candidate code, always
 * through the ABI trampoline (tramp.S). Per case it copies the host's image of each arena
 * window in, calls, and reports the return registers, the ABI findings and a hash of every
 * window after the call (the host compares them with the reference's). Modes:
 *   CHECK  every case once, a record per case
 *   DUMP   one case, then the bytes of its windows (for feedback)
 *   TIME   the cases in passes of `arg` cases each (a variant of the perf workload: the
 *          same sizes and places, other contents), after one untimed pass of each function
 *          on variant 0: `reps` rounds of three timed passes on the round's variant, the
 *          candidate, the baseline and a second copy of the baseline linked elsewhere (an
 *          A/A pair: the noise floor), in each of their six orders in turn; the nanoseconds
 *          of each; after the candidate's first pass of each variant, a record per case
 *          (variant 0) or one line for the pass (the others); the variants no round
 *          reached run once more, untimed, for theirs
 *   COUNT  one pass of one function inside crucible_count_region (callgrind's
 *          --toggle-collect), then a record per case
 * Every measured pass (TIME, COUNT) runs on a stack of its own, and before each the driver
 * scrubs what a function could keep from an earlier pass: that stack (below the stack
 * pointer and the red zone included), the arenas outside the case windows, the vector and
 * x87 registers. With new contents each round, nothing a pass left can make a later one
 * faster: the passes timed are the pass counted.
 * A fault in candidate code is reported from a signal handler on its own stack.
 *
 * In CHECK and DUMP modes every arena outside the case's windows holds a pattern: after
 * each call the RED_ZONE bytes on either side of each window are checked, the windows put
 * back to the pattern, and the whole of every arena is checked once as many bytes went by
 * as it holds (and after the last case). The first byte found changed is an O line: a
 * write outside every buffer, further out than the window's own fill.
 * The time stamp counter is off (PR_SET_TSC) before candidate code runs: rdtsc and rdtscp
 * fault wherever they hide; the driver's own clock is the clock_gettime system call.
 */
#include "common.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

enum { MODE_CHECK = 1, MODE_DUMP = 2, MODE_TIME = 3, MODE_COUNT = 4 };
enum { FLAG_VALGRIND = 1, FLAG_BASE = 2 };
enum { MAX_ARGS = 6, MAX_ARENAS = 6, MAX_CASES = 1 << 16 };
#define NULL_OFF UINT64_MAX
#define PAGE 4096UL
#define ARENA_BASE 0x100000000000UL
#define ARENA_STRIDE 0x100000000UL /* 4 GiB apart: the largest arena is 1 GiB */
#define RED_ZONE 4096UL /* verifiers/x86asm/cases.py RED_ZONE */
#define GUARD 64UL      /* cases.py GUARD: the fill bytes on each side of a window's buffers */

/* Native runs: only what the driver itself needs once candidate code may run. Anything
 * else kills the process with SIGSYS (the verdict's forbidden_syscall). */
static struct sock_filter native[] = {
    ARCH_CHECK(SECCOMP_RET_KILL_PROCESS),
    ALLOW(SYS_write), ALLOW(SYS_exit_group), ALLOW(SYS_exit), ALLOW(SYS_rt_sigreturn),
    ALLOW(SYS_clock_gettime),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};

struct header {
    char magic[8];
    uint64_t mode, n_cases, n_args, n_arenas, reps, flags, nonce, arg;
};

/* the baseline's second copy (alt.*), linked where a candidate's code goes: an A/A pair
 * with the baseline that also sees what code placement alone does to the time; absent
 * (0) in links that time nothing */
extern char crucible_alt_entry[] __attribute__((weak));

static struct header H;
static uint64_t arena_size[MAX_ARENAS], arg_kind[MAX_ARGS];
static unsigned char *arena[MAX_ARENAS];
static const unsigned char **cases; /* each case's bytes in the input */
static struct call_ctx ctx;
static volatile uint64_t current_case = UINT64_MAX;

/* --- output: a buffer written with write(2) only, no stdio after the filter ---------- */
static char out[1 << 16];
static size_t out_len;

static void flush(void) {
    size_t done = 0;
    while (done < out_len) {
        ssize_t n = write(1, out + done, out_len - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    out_len = 0;
}
static void put(const char *s, size_t n) {
    if (out_len + n > sizeof out) flush();
    memcpy(out + out_len, s, n);
    out_len += n;
}
static void put_s(const char *s) { put(s, strlen(s)); }
static void put_hex(uint64_t v) {
    char b[17];
    for (int i = 15; i >= 0; i--) {
        b[i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    }
    b[16] = ' ';
    put(b, 17);
}
static void put_u(uint64_t v) {
    char b[21];
    int i = 20;
    b[i] = ' ';
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b + i, (size_t)(21 - i));
}
/* every put_* ends in a space: the last one becomes the line's end */
static void end_line(void) { out[out_len - 1] = '\n'; }

/* --- faults in candidate code ---------------------------------------------------------- */
static char altstack[1 << 16];

/* X <case> <signal> <address> <rip> <si_code> <page-fault error code> <bytes at rip> */
static void on_fault(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP], insn = 0;
    /* a fault that is no page fault was raised by the instruction at rip, on a page just
     * executed: its bytes tell a refused rdtsc or rdpmc from any other (none past the page) */
    if (sig == SIGSEGV && si->si_code == SI_KERNEL) {
        uint64_t n = PAGE - (rip & (PAGE - 1));
        memcpy(&insn, (const void *)rip, n < 8 ? n : 8);
    }
    flush();
    put_s("X ");
    put_u(current_case);
    put_u((uint64_t)sig);
    put_hex((uint64_t)si->si_addr);
    put_hex(rip);
    put_hex((uint64_t)(uint32_t)si->si_code);
    put_hex((uint64_t)uc->uc_mcontext.gregs[REG_ERR]);
    put_hex(insn);
    end_line();
    flush();
    syscall(SYS_exit_group, 128 + sig);
}

/* --- input ------------------------------------------------------------------------------ */
static const unsigned char *input_end;

static void bad_input(const char *why) {
    write(2, "crucible driver: bad input: ", 28);
    write(2, why, strlen(why));
    write(2, "\n", 1);
    _exit(EXIT_BAD_INPUT);
}

static uint64_t get_u64(const unsigned char **p) {
    uint64_t v;
    if ((size_t)(input_end - *p) < 8) bad_input("truncated");
    memcpy(&v, *p, 8);
    *p += 8;
    return v;
}

static void read_input(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) bad_input("cannot open the input file");
    unsigned char *buf = mmap(NULL, (size_t)st.st_size + 1, PROT_READ, MAP_PRIVATE, fd, 0);
    if (buf == MAP_FAILED) bad_input("cannot map the input file");
    close(fd);
    input_end = buf + st.st_size;
    if ((size_t)st.st_size < sizeof H) bad_input("no header");
    memcpy(&H, buf, sizeof H);
    if (memcmp(H.magic, "CRXASM01", 8) != 0) bad_input("magic");
    if (H.n_args > MAX_ARGS || H.n_arenas > MAX_ARENAS || H.n_cases > MAX_CASES)
        bad_input("too many args, arenas or cases");
    const unsigned char *p = buf + sizeof H;
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        arena_size[a] = get_u64(&p);
        if (arena_size[a] % PAGE || arena_size[a] > (1UL << 30)) bad_input("arena size");
    }
    for (uint64_t i = 0; i < H.n_args; i++) {
        arg_kind[i] = get_u64(&p);
        if (arg_kind[i] > H.n_arenas) bad_input("argument kind");
    }
    cases = mmap(NULL, (H.n_cases + 1) * sizeof *cases, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cases == MAP_FAILED) bad_input("no memory for the case table");
    for (uint64_t c = 0; c < H.n_cases; c++) {
        cases[c] = p;
        for (uint64_t i = 0; i < H.n_args; i++) {
            uint64_t v = get_u64(&p);
            if (arg_kind[i] && v != NULL_OFF && v > arena_size[arg_kind[i] - 1]) bad_input("pointer");
        }
        for (uint64_t a = 0; a < H.n_arenas; a++) {
            uint64_t lo = get_u64(&p), hi = get_u64(&p);
            if (lo > hi || hi > arena_size[a]) bad_input("window");
            uint64_t padded = (hi - lo + 7) & ~7UL;
            if ((uint64_t)(input_end - p) < padded) bad_input("truncated image");
            p += padded;
        }
    }
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        /* at the same address in every run (no ASLR): how two buffers fall relative to
         * each other in the cache (4K aliasing between a loop's loads and stores) is then
         * the same for the candidate, the baseline and every rerun */
        void *at = (void *)(ARENA_BASE + a * ARENA_STRIDE);
        unsigned char *m = mmap(at, arena_size[a] + 2 * PAGE, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (m == MAP_FAILED || mprotect(m + PAGE, arena_size[a], PROT_READ | PROT_WRITE) != 0)
            bad_input("no memory for the arenas");
        arena[a] = m + PAGE;
    }
}

/* --- one call -------------------------------------------------------------------------- */

/* copy case c's window images into the arenas; its arguments into ctx */
static void setup(uint64_t c) {
    const unsigned char *p = cases[c];
    for (uint64_t i = 0; i < H.n_args; i++) {
        uint64_t v = get_u64(&p);
        if (arg_kind[i]) v = v == NULL_OFF ? 0 : (uint64_t)(arena[arg_kind[i] - 1] + v);
        ctx.args[i] = v;
    }
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        uint64_t lo = get_u64(&p), hi = get_u64(&p);
        memcpy(arena[a] + lo, p, hi - lo);
        p += (hi - lo + 7) & ~7UL;
    }
}

static void windows(uint64_t c, uint64_t lo_hi[][2]) {
    const unsigned char *p = cases[c] + 8 * H.n_args;
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        lo_hi[a][0] = get_u64(&p);
        lo_hi[a][1] = get_u64(&p);
        p += (lo_hi[a][1] - lo_hi[a][0] + 7) & ~7UL;
    }
}

/* --- the arenas outside the windows ---------------------------------------------------- */
static uint64_t pattern[MAX_ARENAS]; /* byte i of an arena: byte i % 8 of its word */
static uint64_t scan_from, scan_bytes, arena_bytes;
static int stray_seen;

static unsigned char pattern_at(uint64_t a, uint64_t i) {
    return (unsigned char)(pattern[a] >> (8 * (i & 7)));
}

static void fill_pattern(uint64_t a, uint64_t lo, uint64_t hi) {
    uint64_t i = lo;
    for (; i < hi && (i & 7); i++) arena[a][i] = pattern_at(a, i);
    for (; i + 8 <= hi; i += 8) memcpy(arena[a] + i, &pattern[a], 8);
    for (; i < hi; i++) arena[a][i] = pattern_at(a, i);
}

/* the first byte of [lo, hi) of arena a that is not the pattern's, or hi */
static uint64_t first_changed(uint64_t a, uint64_t lo, uint64_t hi) {
    uint64_t i = lo, w;
    for (; i < hi && (i & 7); i++)
        if (arena[a][i] != pattern_at(a, i)) return i;
    for (; i + 8 <= hi; i += 8) {
        memcpy(&w, arena[a] + i, 8);
        if (w != pattern[a]) break;
    }
    for (; i < hi; i++)
        if (arena[a][i] != pattern_at(a, i)) return i;
    return hi;
}

/* O <first case> <last case> <arena> <offset>: a byte outside every window changed during
 * one of those calls (the first found; one line a run) */
static void stray(uint64_t c0, uint64_t c1, uint64_t a, uint64_t at) {
    if (stray_seen) return;
    stray_seen = 1;
    put_s("O ");
    put_u(c0);
    put_u(c1);
    put_u(a);
    put_u(at);
    end_line();
}

static void start_pattern(void) {
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        pattern[a] = mix(H.nonce ^ 0x7265647a6f6e65ULL ^ a);
        fill_pattern(a, 0, arena_size[a]);
        arena_bytes += arena_size[a];
    }
}

/* after case c (its windows hashed): the red zones beside its windows, its windows back to
 * the pattern, and every arena whole once as many bytes went by as the arenas hold */
static void check_outside(uint64_t c, uint64_t lo_hi[][2]) {
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        uint64_t lo = lo_hi[a][0], hi = lo_hi[a][1];
        uint64_t zlo = lo > RED_ZONE ? lo - RED_ZONE : 0;
        uint64_t zhi = arena_size[a] - hi > RED_ZONE ? hi + RED_ZONE : arena_size[a];
        uint64_t at = first_changed(a, zlo, lo);
        if (at == lo && (at = first_changed(a, hi, zhi)) == zhi) at = UINT64_MAX;
        if (at != UINT64_MAX) {
            stray(c, c, a, at);
            fill_pattern(a, zlo, zhi);
        }
        fill_pattern(a, lo, hi);
        scan_bytes += hi - lo + 2 * RED_ZONE;
    }
    if (scan_bytes < arena_bytes && c + 1 < H.n_cases) return;
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        uint64_t at = first_changed(a, 0, arena_size[a]);
        if (at != arena_size[a]) {
            stray(scan_from, c, a, at);
            fill_pattern(a, 0, arena_size[a]);
        }
    }
    scan_from = c + 1;
    scan_bytes = 0;
}

struct result {
    uint64_t rax, rdx, abi, misaligned;
};
static struct result results[MAX_CASES];
static uint64_t case_args[MAX_CASES][MAX_ARGS]; /* a pass's arguments, set up beforehand */

static void call(char *fn, uint64_t c) {
    memcpy(ctx.args, case_args[c], sizeof ctx.args);
    ctx.fn = (uint64_t)fn;
    current_case = c;
    uint64_t abi = checked_call(&ctx, H.nonce ^ (c << 8));
    results[c] = (struct result){ctx.rax, ctx.rdx, abi, crucible_misaligned};
}

/* FNV-1a over 8-byte words (windows reach megabytes since the cases reach twice the perf
 * workload's sizes: a byte at a time was most of a check run); each step is a bijection of
 * the state, so windows that differ in one word always hash apart */
static uint64_t fnv1a(const unsigned char *p, uint64_t n) {
    uint64_t h = 0xcbf29ce484222325ULL, w, i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return mix(h ^ n);
}

/* R <case> <rax> <rdx> <abi> <misaligned helpers> <hash of each window> */
static void record(uint64_t c) {
    uint64_t w[MAX_ARENAS][2];
    windows(c, w);
    put_s("R ");
    put_u(c);
    put_hex(results[c].rax);
    put_hex(results[c].rdx);
    put_hex(results[c].abi);
    put_hex(results[c].misaligned);
    for (uint64_t a = 0; a < H.n_arenas; a++) put_hex(fnv1a(arena[a] + w[a][0], w[a][1] - w[a][0]));
    end_line();
}

static uint64_t fnv1a_from(uint64_t h, const unsigned char *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* P <variant> <abi findings, or-ed> <misaligned helpers, or-ed> <hash>: a later variant's
 * pass in one line (a record per case of 16 variants floods the output: 4096 lines for
 * 256 calls a pass). The hash chains, case by case, the return register under the return
 * type's width (the header's flags, bits 8-15) and each window's hash, as the host does
 * from the reference's records. */
static void pass_record(uint64_t v, uint64_t per) {
    unsigned bits = (unsigned)(H.flags >> 8) & 0xff;
    uint64_t mask = bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
    uint64_t h = 0xcbf29ce484222325ULL, abi = 0, mis = 0;
    for (uint64_t c = v * per; c < (v + 1) * per; c++) {
        uint64_t w[MAX_ARENAS][2], words[1 + MAX_ARENAS];
        windows(c, w);
        words[0] = results[c].rax & mask;
        for (uint64_t a = 0; a < H.n_arenas; a++)
            words[1 + a] = fnv1a(arena[a] + w[a][0], w[a][1] - w[a][0]);
        h = fnv1a_from(h, (const unsigned char *)words, 8 * (1 + H.n_arenas));
        abi |= results[c].abi;
        mis |= results[c].misaligned;
    }
    put_s("P ");
    put_u(v);
    put_hex(abi);
    put_hex(mis);
    put_hex(h);
    end_line();
}

/* K <arena> <hash of each DUMP_CHUNK bytes of its window>, then D <arena> <offset> <the
 * bytes of at most DUMP_MAX from the window's start + H.reps, hex>: the host finds the first
 * chunk that differs from the reference's and asks for its bytes (a window is up to
 * megabytes; the run's output is capped) */
enum { DUMP_CHUNK = 4096, DUMP_MAX = 12288 };

static void dump(uint64_t c) {
    uint64_t w[MAX_ARENAS][2];
    windows(c, w);
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        uint64_t lo = w[a][0], hi = w[a][1];
        put_s("K ");
        put_u(a);
        for (uint64_t i = lo; i < hi; i += DUMP_CHUNK)
            put_hex(fnv1a(arena[a] + i, hi - i < DUMP_CHUNK ? hi - i : DUMP_CHUNK));
        end_line();
        uint64_t from = hi - lo > H.reps ? lo + H.reps : hi;
        uint64_t to = hi - from > DUMP_MAX ? from + DUMP_MAX : hi;
        put_s("D ");
        put_u(a);
        put_u(from);
        for (uint64_t i = from; i < to; i++) {
            char b[2] = {"0123456789abcdef"[arena[a][i] >> 4], "0123456789abcdef"[arena[a][i] & 15]};
            put(b, 2);
        }
        put(" ", 1);
        end_line();
    }
}

static uint64_t differs(const unsigned char *now, const unsigned char *was, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (now[i] != was[i]) return i;
    return n;
}

/* after case c: the window's own fill, the host's random bytes before its first buffer and
 * (where the arena does not end first) the GUARD bytes after its last; one changed is a
 * write just outside the buffers */
static void check_fill(uint64_t c) {
    const unsigned char *p = cases[c];
    uint64_t args[MAX_ARGS];
    for (uint64_t i = 0; i < H.n_args; i++) args[i] = get_u64(&p);
    for (uint64_t a = 0; a < H.n_arenas; a++) {
        uint64_t lo = get_u64(&p), hi = get_u64(&p), first = hi;
        const unsigned char *img = p;
        p += (hi - lo + 7) & ~7UL;
        for (uint64_t i = 0; i < H.n_args; i++)
            if (arg_kind[i] == a + 1 && args[i] != NULL_OFF && args[i] < first) first = args[i];
        uint64_t k = differs(arena[a] + lo, img, first - lo);
        if (k < first - lo) {
            stray(c, c, a, lo + k);
            continue;
        }
        if (hi == arena_size[a] || hi - first < GUARD) continue; /* it ends at the guard page */
        k = differs(arena[a] + hi - GUARD, img + (hi - GUARD - lo), GUARD);
        if (k < GUARD) stray(c, c, a, hi - GUARD + k);
    }
}

static uint64_t now_ns(void) {
    struct timespec t;
    /* the system call, not the vDSO's clock_gettime: that reads the time stamp counter,
     * which faults here (PR_SET_TSC) */
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* cases first..first+n-1 once, in order: the region callgrind counts (--toggle-collect) */
__attribute__((noinline)) void crucible_count_region(char *fn, uint64_t first, uint64_t n) {
    for (uint64_t c = first; c < first + n; c++) call(fn, c);
    __asm__ volatile("" ::: "memory");
}

/* --- measured passes: a stack of their own, scrubbed before each ------------------------ */
#define PASS_STACK (1UL << 20)
static unsigned char *pass_stack; /* PASS_STACK bytes above an inaccessible page */
static int has_avx;

/* crucible_on_stack(top, fn, first, n): crucible_count_region(fn, first, n) with %rsp at
 * `top` (16-byte aligned), then back on the driver's own stack */
__asm__(".text\n"
        ".globl crucible_on_stack\n"
        ".type crucible_on_stack, @function\n"
        "crucible_on_stack:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    mov %rdi, %rsp\n"
        "    mov %rsi, %rdi\n"
        "    mov %rdx, %rsi\n"
        "    mov %rcx, %rdx\n"
        "    call crucible_count_region\n"
        "    mov %rbp, %rsp\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size crucible_on_stack, .-crucible_on_stack\n");
void crucible_on_stack(unsigned char *top, char *fn, uint64_t first, uint64_t n);

static void map_pass_stack(void) {
    unsigned char *m = mmap(NULL, PASS_STACK + PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m + PAGE, PASS_STACK, PROT_READ | PROT_WRITE) != 0)
        bad_input("no memory for the pass stack");
    pass_stack = m + PAGE;
    __builtin_cpu_init();
    has_avx = __builtin_cpu_supports("avx");
}

/* what a function could have kept from the pass before, gone: the pass stack (every byte
 * of it holds `fill` again), the arenas (the windows are copied in next), the vector
 * registers (vzeroall: upper halves too), the x87 registers (zeros loaded, then popped:
 * empty and zero). The stack is filled whole once; after that only from the lowest byte
 * that differs from the fill up: a scan that reads, where a memset of the whole megabyte
 * before every pass would leave it dirty in the caches the pass then runs in (a write-back
 * cost in every timed pass, the baseline's and the candidate's alike, that shrinks every
 * ratio towards 1). Nothing below that byte changed, so nothing is kept there. */
static unsigned char stack_fill;

static void scrub(uint64_t pass) {
    if (pass == 0) {
        stack_fill = (unsigned char)(mix(H.nonce ^ 0x57ac) | 1);
        memset(pass_stack, stack_fill, PASS_STACK);
    } else {
        uint64_t word = 0x0101010101010101ULL * stack_fill, low = 0;
        const uint64_t *w = (const uint64_t *)pass_stack;
        while (low < PASS_STACK / 8 && w[low] == word) low++;
        memset(pass_stack + 8 * low, stack_fill, PASS_STACK - 8 * low);
    }
    unsigned char fill = (unsigned char)(mix(H.nonce ^ (pass << 20)) | 1);
    for (uint64_t a = 0; a < H.n_arenas; a++) memset(arena[a], fill, arena_size[a]);
    if (has_avx)
        __asm__ volatile("vzeroall" ::: "memory");
    __asm__ volatile("fninit\n\tfldz\n\tfldz\n\tfldz\n\tfldz\n\tfldz\n\tfldz\n\tfldz\n\tfldz\n\t"
                     "fstp %%st(0)\n\tfstp %%st(0)\n\tfstp %%st(0)\n\tfstp %%st(0)\n\t"
                     "fstp %%st(0)\n\tfstp %%st(0)\n\tfstp %%st(0)\n\tfstp %%st(0)" ::: "memory");
}

/* one measured pass of fn over cases first..first+n-1: scrubbed, set up, run on the pass
 * stack; its nanoseconds */
static uint64_t pass_of(char *fn, uint64_t first, uint64_t n, uint64_t pass) {
    scrub(pass);
    for (uint64_t c = first; c < first + n; c++) {
        setup(c);
        memcpy(case_args[c], ctx.args, sizeof ctx.args);
    }
    uint64_t t0 = now_ns();
    crucible_on_stack(pass_stack + PASS_STACK, fn, first, n);
    return now_ns() - t0;
}

int main(int argc, char **argv) {
    if (argc != 2) bad_input("usage: driver INPUT");
    read_input(argv[1]);
    map_pass_stack();
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaltstack(&ss, NULL) != 0) bad_input("sigaltstack");
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    char *fn = (H.flags & FLAG_BASE) ? crucible_base_entry : crucible_cand_entry;
    if (H.mode == MODE_CHECK || H.mode == MODE_DUMP) start_pattern();
    /* what the static rules refuse, stopped where it runs: the cycle counter faults
     * (rdpmc does already: no perf event is mapped for it) */
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) bad_input("PR_SET_TSC");
    if (H.flags & FLAG_VALGRIND)
        INSTALL(under_valgrind);
    else
        INSTALL(native);
    started();
    for (uint64_t a = 0; a < H.n_arenas; a++) { /* where a fault address lands */
        put_s("A ");
        put_u(a);
        put_hex((uint64_t)arena[a]);
        end_line();
    }

    if (H.mode == MODE_CHECK || H.mode == MODE_DUMP) {
        for (uint64_t c = 0; c < H.n_cases; c++) {
            if (H.mode == MODE_DUMP && c != H.arg) continue;
            setup(c);
            memcpy(case_args[c], ctx.args, sizeof ctx.args);
            call(fn, c);
            record(c);
            if (H.mode == MODE_DUMP) {
                dump(c);
                continue;
            }
            check_fill(c);
            uint64_t w[MAX_ARENAS][2];
            windows(c, w);
            check_outside(c, w);
        }
    } else if (H.mode == MODE_TIME) {
        /* the cases are `variants` passes of `per` cases (the host lays one pass's cases out
         * apart, so the arenas hold a whole pass's input at once; every variant at the same
         * places) */
        uint64_t per = H.arg ? H.arg : H.n_cases;
        if (per == 0 || H.n_cases % per) bad_input("cases per pass");
        uint64_t variants = H.n_cases / per, pass = 0;
        char *fns[3] = {crucible_cand_entry, crucible_base_entry,
                        crucible_alt_entry ? crucible_alt_entry : crucible_base_entry};
        static unsigned char recorded[MAX_CASES];
        for (int k = 0; k < 3; k++) { /* a pass of each first, untimed: the pages touched,
                                         the caches and predictors warm */
            pass_of(fns[k], 0, per, pass++);
            if (k == 0) {
                for (uint64_t c = 0; c < per; c++) record(c);
                recorded[0] = 1;
            }
        }
        for (uint64_t r = 0; r < H.reps; r++) {
            uint64_t v = variants > 1 ? 1 + r % (variants - 1) : 0, t[3];
            /* every order of the three in turn: none follows another more often (a pass
             * right after one of the same code can run warmer) */
            static const uint64_t order[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1},
                                                 {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
            for (uint64_t k = 0; k < 3; k++) {
                uint64_t which = order[r % 6][k];
                t[which] = pass_of(fns[which], v * per, per, pass++);
                if (which == 0 && !recorded[v]) {
                    pass_record(v, per);
                    recorded[v] = 1;
                }
            }
            put_s("T ");
            put_u(r);
            put_u(t[0]);
            put_u(t[1]);
            put_u(t[2]);
            end_line();
        }
        for (uint64_t v = 1; v < variants; v++) {
            if (recorded[v]) continue;
            pass_of(crucible_cand_entry, v * per, per, pass++);
            pass_record(v, per);
        }
    } else if (H.mode == MODE_COUNT) {
        pass_of(fn, 0, H.n_cases, 0);
        for (uint64_t c = 0; c < H.n_cases; c++) record(c);
    } else {
        bad_input("mode");
    }
    put_s("E ");
    put_u(H.n_cases);
    end_line();
    flush();
    return 0;
}
