/* Crucible's x86-64 ABI trampoline and the checked entries of the C library functions a
 * candidate may call. Trusted code, assembled by the host; linked into every driver.
 *
 * crucible_call(ctx): calls ctx->fn with ctx->args in the System V argument registers,
 * the callee-saved registers (rbx, rbp, r12-r15) loaded with canaries and the scratch
 * registers poisoned, then records what the callee left: the callee-saved registers, the
 * stack pointer, DF, MXCSR, the x87 control word and tag word (an empty x87 stack), and
 * whether it wrote into the 64
 * bytes of canaries above its return address (the caller's frame). The driver compares.
 * The stack is 16-byte aligned at the call, as the ABI promises the callee.
 */
    .text

/* struct call_ctx offsets (driver.c asserts the same) */
#define FN        0
#define ARGS      8
#define CANARY    56   /* rbx rbp r12 r13 r14 r15, then the poison word */
#define AFTER     112  /* rbx rbp r12 r13 r14 r15 rsp */
#define RSP       168
#define RAX       176
#define RDX       184
#define RFLAGS    192
#define MXCSR0    200
#define MXCSR1    204
#define FCW0      208
#define FCW1      210
#define FRAMEBAD  216
#define FENV      224
#define FRAME     72   /* 8 for alignment + 64 bytes of canaries */

    .globl crucible_call
    .type crucible_call, @function
crucible_call:
    push %rbp
    push %rbx
    push %r12
    push %r13
    push %r14
    push %r15
    sub $FRAME, %rsp              /* rsp is now 16-byte aligned */
    mov %rdi, crucible_ctx(%rip)
    mov CANARY+48(%rdi), %rax
    mov %rax, 0(%rsp)
    mov %rax, 8(%rsp)
    mov %rax, 16(%rsp)
    mov %rax, 24(%rsp)
    mov %rax, 32(%rsp)
    mov %rax, 40(%rsp)
    mov %rax, 48(%rsp)
    mov %rax, 56(%rsp)
    mov %rax, 64(%rsp)
    stmxcsr MXCSR0(%rdi)
    fnstcw FCW0(%rdi)
    mov %rsp, RSP(%rdi)
    mov CANARY+0(%rdi), %rbx
    mov CANARY+8(%rdi), %rbp
    mov CANARY+16(%rdi), %r12
    mov CANARY+24(%rdi), %r13
    mov CANARY+32(%rdi), %r14
    mov CANARY+40(%rdi), %r15
    mov FN(%rdi), %r11
    mov %rax, %r10                /* scratch registers hold junk, never zero */
    mov ARGS+8(%rdi), %rsi
    mov ARGS+16(%rdi), %rdx
    mov ARGS+24(%rdi), %rcx
    mov ARGS+32(%rdi), %r8
    mov ARGS+40(%rdi), %r9
    mov ARGS+0(%rdi), %rdi
    call *%r11
    mov crucible_ctx(%rip), %r11
    mov %rax, RAX(%r11)
    mov %rdx, RDX(%r11)
    mov %rbx, AFTER+0(%r11)
    mov %rbp, AFTER+8(%r11)
    mov %r12, AFTER+16(%r11)
    mov %r13, AFTER+24(%r11)
    mov %r14, AFTER+32(%r11)
    mov %r15, AFTER+40(%r11)
    mov %rsp, AFTER+48(%r11)
    stmxcsr MXCSR1(%r11)
    fnstcw FCW1(%r11)
    fnstenv FENV(%r11)            /* its tag word: what the callee left on the x87 stack */
    fninit                        /* an empty stack again for the driver and the next call */
    mov RSP(%r11), %rsp           /* our own frame back, whatever the callee did to rsp */
    pushfq
    pop %rax
    mov %rax, RFLAGS(%r11)
    cld
    ldmxcsr MXCSR0(%r11)
    fldcw FCW0(%r11)
    mov CANARY+48(%r11), %rax
    xor %ecx, %ecx
    xor %edx, %edx
1:  cmp %rax, (%rsp,%rdx,8)
    setne %cl
    or %rcx, FRAMEBAD(%r11)
    inc %rdx
    cmp $9, %rdx
    jb 1b
    add $FRAME, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbx
    pop %rbp
    ret
    .size crucible_call, .-crucible_call

/* The C library functions a candidate may call, each entered through a check of the stack
 * alignment the ABI requires at a call (rsp + 8 a multiple of 16 on entry): a misaligned
 * call sets its bit in crucible_misaligned, then goes on to the real function. */
#define CHECKED(name, bit)              \
    .globl crucible_w_##name;           \
    .type crucible_w_##name, @function; \
crucible_w_##name:                      \
    mov %rsp, %r11;                     \
    and $15, %r11;                      \
    cmp $8, %r11;                       \
    je 1f;                              \
    orq $(1 << bit), crucible_misaligned(%rip); \
1:  jmp name;                           \
    .size crucible_w_##name, .-crucible_w_##name

CHECKED(memcpy, 0)
CHECKED(memmove, 1)
CHECKED(memset, 2)
CHECKED(memcmp, 3)
CHECKED(memchr, 4)
CHECKED(strlen, 5)
CHECKED(strchr, 6)
CHECKED(strcmp, 7)

    .bss
    .align 8
    .globl crucible_ctx, crucible_misaligned
crucible_ctx:
    .quad 0
crucible_misaligned:
    .quad 0
    .section .note.GNU-stack,"",@progbits
