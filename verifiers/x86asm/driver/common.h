/* What both drivers (driver.c: one function; program.c: a whole program) share: the ABI
 * trampoline's context, the seccomp filters, the exit codes of the driver's own failures.
 * Trusted code, compiled by the host. */
#ifndef CRUCIBLE_COMMON_H
#define CRUCIBLE_COMMON_H
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the driver's own failures, before any candidate code ran: the machine's, not the
 * candidate's (the host trusts them only before the driver's start line) */
#define EXIT_BAD_INPUT 90
#define EXIT_NO_FILTER 91
#define EXIT_ABI 86  /* program.c: main broke the ABI */
#define STARTED "crucible: started\n"

struct call_ctx {
    uint64_t fn;
    uint64_t args[6];
    uint64_t canary[7];
    uint64_t after[7];
    uint64_t rsp;
    uint64_t rax, rdx, rflags;
    uint32_t mxcsr0, mxcsr1;
    uint16_t fcw0, fcw1;
    uint32_t pad;
    uint64_t frame_bad;
    unsigned char fenv[28]; /* fnstenv after the call: its tag word says what the x87 stack holds */
    uint32_t pad2;
};
_Static_assert(offsetof(struct call_ctx, canary) == 56, "tramp.S CANARY");
_Static_assert(offsetof(struct call_ctx, after) == 112, "tramp.S AFTER");
_Static_assert(offsetof(struct call_ctx, rsp) == 168, "tramp.S RSP");
_Static_assert(offsetof(struct call_ctx, rflags) == 192, "tramp.S RFLAGS");
_Static_assert(offsetof(struct call_ctx, mxcsr0) == 200, "tramp.S MXCSR0");
_Static_assert(offsetof(struct call_ctx, fcw0) == 208, "tramp.S FCW0");
_Static_assert(offsetof(struct call_ctx, frame_bad) == 216, "tramp.S FRAMEBAD");
_Static_assert(offsetof(struct call_ctx, fenv) == 224, "tramp.S FENV");

/* ABI findings, one bit each (verifiers/x86asm/cases.py ABI_BITS names them) */
enum {
    ABI_RBX = 1, ABI_RBP = 2, ABI_R12 = 4, ABI_R13 = 8, ABI_R14 = 16, ABI_R15 = 32,
    ABI_RSP = 64, ABI_DF = 128, ABI_MXCSR = 256, ABI_X87 = 512, ABI_FRAME = 1024,
    ABI_ALIGN = 2048, ABI_X87STACK = 4096,
};

extern void crucible_call(struct call_ctx *);
extern char crucible_cand_entry[], crucible_base_entry[];
extern volatile uint64_t crucible_misaligned;

static uint64_t mix(uint64_t x) { /* splitmix64: canaries nobody guesses by accident */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* call ctx->fn through the trampoline with fresh canaries; the ABI findings */
static uint64_t checked_call(struct call_ctx *ctx, uint64_t seed) {
    for (int k = 0; k < 7; k++) ctx->canary[k] = mix(seed ^ (uint64_t)k) | 1;
    ctx->frame_bad = 0;
    crucible_misaligned = 0;
    crucible_call(ctx);
    uint64_t abi = 0;
    for (int k = 0; k < 6; k++)
        if (ctx->after[k] != ctx->canary[k]) abi |= 1u << k;
    if (ctx->after[6] != ctx->rsp) abi |= ABI_RSP;
    if (ctx->rflags & (1u << 10)) abi |= ABI_DF;
    if ((ctx->mxcsr0 ^ ctx->mxcsr1) & 0xffc0) abi |= ABI_MXCSR;
    if (ctx->fcw0 != ctx->fcw1) abi |= ABI_X87;
    if (ctx->frame_bad) abi |= ABI_FRAME;
    if (crucible_misaligned) abi |= ABI_ALIGN;
    /* every x87 register empty (tag 11) at a return that is not a long double's: values
     * left on the stack, or MMX without emms, break the caller's next x87 code */
    if ((ctx->fenv[8] | ctx->fenv[9] << 8) != 0xffff) abi |= ABI_X87STACK;
    return abi;
}

/* --- the seccomp filters -------------------------------------------------------------- */
#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define ALLOW(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
/* syscall n allowed unless its argument `a` has PROT_EXEC */
#define DENY_EXEC(n, a)                                                              \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 4),                                  \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[a])),      \
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),                           \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),                            \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define ARCH_CHECK(fail)                                                             \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),         \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),                    \
    BPF_STMT(BPF_RET | BPF_K, fail), LD_NR,                                          \
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),                           \
    BPF_STMT(BPF_RET | BPF_K, fail)

/* Under valgrind the kernel sees valgrind's own system calls, which an allow-list would
 * stop: the filter refuses (EPERM) what no measurement needs and what would let code
 * escape the count: new processes and programs, signals, making pages executable
 * (mprotect: valgrind maps its own memory executable with mmap, so mmap stays open),
 * network, tracing, file removal and renaming, a second filter. */
static struct sock_filter under_valgrind[] = {
    ARCH_CHECK(SECCOMP_RET_ERRNO | EPERM),
    DENY(SYS_execve), DENY(SYS_execveat), DENY(SYS_fork), DENY(SYS_vfork), DENY(SYS_clone),
    DENY(SYS_clone3), DENY(SYS_socket), DENY(SYS_socketpair), DENY(SYS_connect),
    DENY(SYS_ptrace), DENY(SYS_process_vm_readv), DENY(SYS_process_vm_writev), DENY(SYS_kill),
    DENY(SYS_tkill), DENY(SYS_tgkill), DENY(SYS_rt_sigqueueinfo), DENY(SYS_remap_file_pages),
    DENY(SYS_personality), DENY(SYS_prctl), DENY(SYS_seccomp), DENY(SYS_unlink),
    DENY(SYS_unlinkat), DENY(SYS_rename), DENY(SYS_renameat), DENY(SYS_renameat2),
    DENY(SYS_link), DENY(SYS_linkat), DENY(SYS_symlink), DENY(SYS_symlinkat), DENY(SYS_mkdir),
    DENY(SYS_mkdirat), DENY(SYS_rmdir), DENY(SYS_chmod), DENY(SYS_fchmod), DENY(SYS_fchmodat),
    DENY(SYS_chown), DENY(SYS_fchown), DENY(SYS_lchown), DENY(SYS_fchownat), DENY(SYS_truncate),
    DENY(SYS_ftruncate), DENY(SYS_mknod), DENY(SYS_mknodat), DENY(SYS_io_uring_setup),
    DENY(SYS_memfd_create), DENY(SYS_userfaultfd), DENY(SYS_bpf), DENY(SYS_shmat),
    DENY_EXEC(SYS_mprotect, 2), DENY_EXEC(SYS_pkey_mprotect, 2),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

/* the filter, for good: nothing after it can add a looser one (prctl and seccomp are
 * refused by every filter here) */
static void install_filter(struct sock_filter *filter, unsigned short len) {
    struct sock_fprog prog = {.len = len, .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        static const char msg[] = "crucible driver: cannot install its seccomp filter\n";
        write(2, msg, sizeof msg - 1);
        _exit(EXIT_NO_FILTER);
    }
}
#define INSTALL(f) install_filter((f), sizeof(f) / sizeof((f)[0]))

static void started(void) { write(2, STARTED, sizeof STARTED - 1); }

#endif
