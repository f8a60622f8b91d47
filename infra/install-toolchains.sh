#!/usr/bin/env bash
# Installs the Debian toolchains a Crucible node type needs. Idempotent and fast when
# everything is already there.
# Usage: infra/install-toolchains.sh [rtl|embedded|x86asm|ascendc|sandbox|ui|containers|postgres|all]...
set -euo pipefail

want=("${@:-all}")
pkgs=()
pyasc=0
add() { for p in "$@"; do pkgs+=("$p"); done; }
for w in "${want[@]}"; do
  case "$w" in
    sandbox) add bubblewrap util-linux ;;
    rtl) add bubblewrap util-linux iverilog verilator yosys make g++ ;;  # verilator --binary builds with make + g++
    # arm-none-eabi-gcc + newlib (nano) and QEMU's netduinoplus2 (STM32F405); without
    # recommends: a 1.5 GB libstdc++ for arm the firmware never links
    embedded) add bubblewrap util-linux gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm ;;
    # gcc + binutils (as, ld, objcopy, objdump), glibc's static libraries (the drivers link
    # statically: no loader, no library path a run could change), valgrind (callgrind)
    x86asm) add bubblewrap util-linux gcc binutils libc6-dev valgrind ;;
    # pyasc (AscendC's Python DSL, lowered to AscendC C++ with no CANN present) in a venv
    # of its own under /usr/local (the sandbox sees /usr), run as `pyasc-python`
    ascendc) add bubblewrap util-linux python3-venv; pyasc=1 ;;
    base) add make python3-venv ;;
    ui) add chromium ;;  # headless screenshots of the Prefect UI (tests/flows/test_ui_*)
    # Podman serves the Docker API here (no Docker engine); crun fails in this VM's cgroups
    # hybrid mode, so runc; mmdebstrap makes the Debian base image with no registry
    containers) add podman runc mmdebstrap ;;
    postgres) add postgresql ;;  # Prefect's server database beyond SQLite (crucible server --database)
    all) add make g++ python3-venv bubblewrap util-linux iverilog verilator yosys chromium \
      gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc binutils libc6-dev valgrind \
      podman runc mmdebstrap postgresql; pyasc=1 ;;
    *) echo "unknown toolchain group: $w (want rtl, embedded, x86asm, ascendc, sandbox, ui, containers, postgres, base or all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "need root to install: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$pyasc" -eq 1 ]; then
  here="$(cd "$(dirname "$0")" && pwd)"
  venv=/usr/local/lib/crucible/pyasc
  want_hash="$(sha256sum "$here/pyasc-requirements.txt" | cut -c1-16)"
  if [ "$(cat "$venv/.crucible-installed" 2>/dev/null)" != "$want_hash" ] || ! [ -x /usr/local/bin/pyasc-python ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "need root to install pyasc under $venv (run: sudo bash $0 ascendc)" >&2
      exit 1
    fi
    echo "installing: pyasc into $venv"
    rm -rf "$venv"
    # Debian's interpreter, under /usr: the sandbox sees /usr, not a pyenv under /root
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/pyasc-requirements.txt"
    # a wrapper, not a link: the venv's python finds its pyvenv.cfg only from its own path
    printf '#!/bin/sh\nexec %s/bin/python "$@"\n' "$venv" > /usr/local/bin/pyasc-python
    chmod 755 /usr/local/bin/pyasc-python
    echo "$want_hash" > "$venv/.crucible-installed"
  fi
fi
