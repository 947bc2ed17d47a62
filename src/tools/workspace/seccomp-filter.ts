import { arch } from "node:process";

/**
 * The seccomp filter of the command sandbox (docs/security.md, "The command sandbox (bubblewrap)"): a classic
 * BPF program that bubblewrap loads (`--seccomp FD`) before it runs the command. It refuses, with
 * `EPERM`, the system calls no command tool needs and that would undo the sandbox when the host
 * runs as root — mounting and unmounting, pivot_root and chroot, ptrace and cross-process memory
 * access, kernel modules, kexec, the kernel keyring, bpf, io_uring, new namespaces, swap, the clock, reboot —
 * and it refuses to set the set-user-ID or set-group-ID bit on a file (`chmod`, `fchmod`,
 * `fchmodat`, `fchmodat2`, and `open`/`openat`/`creat`/`mknod` creating a file with those bits):
 * a setuid-root shell left in the workspace would run as root later, outside any sandbox.
 * `openat2` (whose mode lies in a structure a filter cannot read) is refused with `ENOSYS`, so
 * the C library falls back to `openat`. A system call of another architecture (the x32 ABI, or
 * 32-bit calls through `int 0x80`) kills the process: those have other numbers.
 *
 * Why hand-written: no maintained npm package builds seccomp programs (libseccomp is a C library,
 * and a native addon for ~40 instructions would cost every host a compiler); the format is the
 * kernel's stable ABI (`struct sock_filter`, include/uapi/linux/filter.h), and bubblewrap reads it
 * raw from a file descriptor. Only x86-64 is built: its numbers are checked by the sandbox's tests
 * on every run; on another architecture `seccompFilter()` returns `undefined` and the sandbox says
 * it cannot hold (commands then ask).
 */

// Instruction classes and fields (include/uapi/linux/bpf_common.h).
const BPF_LD = 0x00;
const BPF_JMP = 0x05;
const BPF_RET = 0x06;
const BPF_W = 0x00;
const BPF_ABS = 0x20;
const BPF_JA = 0x00;
const BPF_JEQ = 0x10;
const BPF_JGE = 0x30;
const BPF_JSET = 0x40;
const BPF_K = 0x00;

const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;

const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;

// struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
/** The low 32 bits of argument `index` (little-endian x86-64). */
const argLow = (index: number): number => 16 + 8 * index;

const S_ISUID_OR_S_ISGID = 0o6000;
const O_CREAT = 0o100;
/** `__O_TMPFILE` without `O_DIRECTORY`: a plain directory open must not read as creating a file. */
const O_TMPFILE = 0o20000000;

/** x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl), refused outright. */
const REFUSED_X86_64: Readonly<Record<string, number>> = {
  ptrace: 101,
  syslog: 103,
  uselib: 134,
  vhangup: 153,
  pivot_root: 155,
  adjtimex: 159,
  chroot: 161,
  acct: 163,
  settimeofday: 164,
  mount: 165,
  umount2: 166,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  iopl: 172,
  ioperm: 173,
  create_module: 174,
  init_module: 175,
  delete_module: 176,
  quotactl: 179,
  nfsservctl: 180,
  lookup_dcookie: 212,
  clock_settime: 227,
  kexec_load: 246,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  clock_adjtime: 305,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  finit_module: 313,
  kexec_file_load: 320,
  bpf: 321,
  userfaultfd: 323,
  // io_uring performs opens (and so setuid creations) in the kernel, where no filter sees them;
  // refused at setup, so libuv and others fall back to ordinary system calls.
  io_uring_setup: 425,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
};

/** Calls that may set a mode: which argument holds it, and which holds the open flags (if any). */
const MODE_SETTERS_X86_64: readonly { name: string; nr: number; mode: number; flags?: number }[] = [
  { name: "open", nr: 2, flags: 1, mode: 2 },
  { name: "creat", nr: 85, mode: 1 },
  { name: "chmod", nr: 90, mode: 1 },
  { name: "fchmod", nr: 91, mode: 1 },
  { name: "mknod", nr: 133, mode: 1 },
  { name: "openat", nr: 257, flags: 2, mode: 3 },
  { name: "mknodat", nr: 259, mode: 2 },
  { name: "fchmodat", nr: 268, mode: 2 },
  { name: "fchmodat2", nr: 452, mode: 2 },
];
const OPENAT2_X86_64 = 437;

type Instruction = [code: number, jt: number, jf: number, k: number];

const load = (offset: number): Instruction => [BPF_LD | BPF_W | BPF_ABS, 0, 0, offset];
const ret = (value: number): Instruction => [BPF_RET | BPF_K, 0, 0, value];
const jump = (op: number, k: number, jt: number, jf: number): Instruction => [BPF_JMP | op | BPF_K, jt, jf, k];

/** The names of the system calls the filter refuses outright, for the docs and the tests. */
export const refusedSystemCalls: readonly string[] = Object.keys(REFUSED_X86_64);

/**
 * The filter for this machine's architecture, as the bytes of a `struct sock_filter` array, or
 * `undefined` where no filter is built (every architecture but x86-64).
 *
 * @example
 * const filter = seccompFilter(); // Buffer of 8-byte instructions, handed to `bwrap --seccomp 3`
 */
export function seccompFilter(architecture: string = arch): Buffer | undefined {
  if (architecture !== "x64") return undefined;
  const program: Instruction[] = [];
  const deny = ret(SECCOMP_RET_ERRNO | EPERM);
  // 1. Another architecture's numbers mean other calls: kill.
  program.push(load(OFFSET_ARCH), jump(BPF_JEQ, AUDIT_ARCH_X86_64, 1, 0), ret(SECCOMP_RET_KILL_PROCESS));
  program.push(load(OFFSET_NR), jump(BPF_JGE, X32_SYSCALL_BIT, 0, 1), ret(SECCOMP_RET_KILL_PROCESS));
  // 2. Refused outright: one comparison each, jumping to the shared EPERM after the block;
  //    openat2 jumps to ENOSYS; anything else jumps over both returns.
  const refused = Object.values(REFUSED_X86_64);
  const count = refused.length;
  refused.forEach((nr, index) => program.push(jump(BPF_JEQ, nr, count + 1 - index, 0)));
  program.push(jump(BPF_JEQ, OPENAT2_X86_64, 2, 0), [BPF_JMP | BPF_JA, 0, 0, 2], deny, ret(SECCOMP_RET_ERRNO | ENOSYS));
  // 3. Mode setters: refuse S_ISUID/S_ISGID (for open-like calls, only when creating a file).
  for (const setter of MODE_SETTERS_X86_64) {
    const block: Instruction[] = [];
    if (setter.flags !== undefined) {
      block.push(load(argLow(setter.flags)), jump(BPF_JSET, O_CREAT | O_TMPFILE, 0, 3));
    }
    block.push(load(argLow(setter.mode)), jump(BPF_JSET, S_ISUID_OR_S_ISGID, 0, 1), deny);
    // Entry: the call's number, reloaded (the block above replaced the accumulator).
    program.push(load(OFFSET_NR), jump(BPF_JEQ, setter.nr, 0, block.length), ...block);
  }
  program.push(ret(SECCOMP_RET_ALLOW));
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], index) => {
    if (jt > 255 || jf > 255) throw new RangeError("seccomp filter: a jump is too long for one instruction");
    bytes.writeUInt16LE(code, index * 8);
    bytes.writeUInt8(jt, index * 8 + 2);
    bytes.writeUInt8(jf, index * 8 + 3);
    bytes.writeUInt32LE(k >>> 0, index * 8 + 4);
  });
  return bytes;
}
