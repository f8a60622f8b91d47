/* Crucible's driver for a whole program (a SuperCoder-style task: the candidate is the
 * program's assembly, its `main` renamed `cand.main` and reached as crucible_cand_entry).
 * Trusted code, compiled by the host, linked statically with the C library.
 *
 *   program POLICY INPUT      POLICY: native | valgrind
 *
 * It puts INPUT on stdin, installs its seccomp filter (a stdio program's system calls;
 * nothing that makes a process, opens a file, maps code or reaches a network), says it
 * started (stderr), then calls main through the ABI trampoline inside
 * crucible_program_region (callgrind's --toggle-collect). main's return value is the exit
 * status; a main that broke the ABI exits EXIT_ABI with the findings on stderr.
 *
 * A system call the filter refuses traps (SIGSYS) into a handler that names the call on
 * stderr ("crucible: syscall N") and then dies of SIGSYS all the same: the host's verdict
 * still keys on the signal the sandbox reports; the number only makes the reason readable
 * ("sysinfo", not "exit 159").
 */
#include "common.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static struct sock_filter native[] = {
    ARCH_CHECK(SECCOMP_RET_KILL_PROCESS),
    ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_readv), ALLOW(SYS_writev),
    ALLOW(SYS_fstat), ALLOW(SYS_newfstatat), ALLOW(SYS_lseek), ALLOW(SYS_brk),
    ALLOW(SYS_munmap), ALLOW(SYS_mremap), ALLOW(SYS_madvise), ALLOW(SYS_close),
    ALLOW(SYS_exit_group), ALLOW(SYS_exit), ALLOW(SYS_rt_sigreturn), ALLOW(SYS_rt_sigprocmask),
    ALLOW(SYS_clock_gettime), ALLOW(SYS_gettimeofday), ALLOW(SYS_time), ALLOW(SYS_getrandom),
    ALLOW(SYS_ioctl), ALLOW(SYS_futex), ALLOW(SYS_getpid),
    /* what glibc itself asks inside a library call the program may make: qsort sizes its
     * merge buffer from the machine's memory (sysconf(_SC_PHYS_PAGES): sysinfo) for arrays
     * over ~1 KiB; read-only facts about the machine, no process, file or mapping */
    ALLOW(SYS_sysinfo),
    /* mmap without PROT_EXEC (malloc's large blocks) */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 4),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
};

/* a refused call: say which (stderr), then die of SIGSYS as the filter's kill would have
 * (SIGSYS is blocked inside its own handler, so the kernel kills on the second trap) */
static void on_sigsys(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    char msg[48] = "crucible: syscall ";
    size_t n = strlen(msg);
    unsigned v = (unsigned)si->si_syscall;
    char d[12];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && k < 11);
    while (k) msg[n++] = d[--k];
    msg[n++] = '\n';
    write(2, msg, n);
    syscall(SYS_kill, 0, SIGSYS);
    _exit(128 + SIGSYS); /* not reached */
}

static struct call_ctx ctx;

__attribute__((noinline)) uint64_t crucible_program_region(void) {
    return checked_call(&ctx, 0x5eed);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s native|valgrind INPUT\n", argv[0]);
        return EXIT_BAD_INPUT;
    }
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0 || dup2(fd, 0) != 0) {
        fprintf(stderr, "crucible driver: cannot open %s\n", argv[2]);
        return EXIT_BAD_INPUT;
    }
    close(fd);
    static char *cand_argv[] = {"prog", NULL};
    static char *cand_envp[] = {NULL};
    ctx.fn = (uint64_t)crucible_cand_entry;
    ctx.args[0] = 1;
    ctx.args[1] = (uint64_t)cand_argv;
    ctx.args[2] = (uint64_t)cand_envp;
    if (strcmp(argv[1], "valgrind") == 0) {
        INSTALL(under_valgrind);
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSYS, &sa, NULL);
        INSTALL(native);
    }
    started();
    uint64_t abi = crucible_program_region();
    if (abi) {
        fflush(stdout);
        fprintf(stderr, "crucible: abi %llx %llx\n", (unsigned long long)abi,
                (unsigned long long)crucible_misaligned);
        fflush(stderr);
        _exit(EXIT_ABI);
    }
    exit((int)ctx.rax);
}
