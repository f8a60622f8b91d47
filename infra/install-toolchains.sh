#!/usr/bin/env bash
# Installs the Debian toolchains a Crucible node type needs. Idempotent and fast when
# everything is already there.
# Usage: infra/install-toolchains.sh [rtl|embedded|x86asm|sandbox|ui|containers|postgres|all]...
set -euo pipefail

want=("${@:-all}")
pkgs=()
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
    base) add make python3-venv ;;
    ui) add chromium ;;  # headless screenshots of the Prefect UI (tests/flows/test_ui_*)
    # Podman serves the Docker API here (no Docker engine); crun fails in this VM's cgroups
    # hybrid mode, so runc; mmdebstrap makes the Debian base image with no registry
    containers) add podman runc mmdebstrap ;;
    postgres) add postgresql ;;  # Prefect's server database beyond SQLite (crucible server --database)
    all) add make g++ python3-venv bubblewrap util-linux iverilog verilator yosys chromium \
      gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc binutils libc6-dev valgrind \
      podman runc mmdebstrap postgresql ;;
    *) echo "unknown toolchain group: $w (want rtl, embedded, x86asm, sandbox, ui, containers, postgres, base or all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "need root to install: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
