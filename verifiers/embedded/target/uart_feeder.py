"""Runs the emulator with the task's UART input held back until the firmware is ready for it.

QEMU reads a serial port's input as soon as it starts, and its USART model drops every byte
that arrives before the firmware has enabled the receiver: fed at start-up, the input is
lost or cut at random. So the emulator's stdin is a pipe this script holds: it copies the
emulator's stdout (USART1) to its own, and sends the input only once the firmware has sent
READY (the harness's `crucible_rx_ready()`, which the test main calls after the candidate
has set up its receiver); READY itself is left out of the transcript. It exits as the
emulator did (its code, or its signal), so the verifier reads the emulator's own status.

Usage (inside the sandbox): python3 -I -B uart_feeder.py INPUT_FILE -- EMULATOR ARGV...
Stdlib only; runs under the system's python3.
"""

import os
import signal
import subprocess
import sys

READY = b"\x06"  # ASCII ACK: no task prints it


def main() -> int:
    path, sep, *argv = sys.argv[1:]
    if sep != "--" or not argv:
        print("usage: uart_feeder.py INPUT -- ARGV...", file=sys.stderr)
        return 2
    with open(path, "rb") as f:
        data = f.read()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    sent = False
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        if not sent and READY in chunk:
            chunk = chunk.replace(READY, b"", 1)
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except BrokenPipeError:
                pass
            sent = True
        out.write(chunk)
        out.flush()
    rc = proc.wait()
    if rc < 0:  # die of the same signal: the sandbox's pid 1 reports it as the emulator's
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc


if __name__ == "__main__":
    sys.exit(main())
