#!/usr/bin/env bash
# Lets this x86_64 Linux machine run linux-arm64 programs, so that CI runs the linux-arm64
# executable (the release build makes its V8 code caches with the arm64 Node and checks it; the
# release test installs it and runs a workflow). qemu-user emulates the CPU; binfmt_misc makes the
# kernel hand aarch64 ELF files to it, so the host can start its workers as usual; Debian's arm64
# cross libraries serve as the programs' /lib (QEMU_LD_PREFIX, set by the build and the test).
# Optional: on failure CI goes on, and the arm64 executable is built but not run.
set -uo pipefail
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || exit 0
libs=/usr/aarch64-linux-gnu/lib
if ! command -v qemu-aarch64 >/dev/null || [ ! -e "$libs/libatomic.so.1" ] ||
  [ ! -e "$libs/libstdc++.so.6" ] || [ ! -e /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    qemu-user qemu-user-binfmt libc6-arm64-cross libstdc++6-arm64-cross libatomic1-arm64-cross \
    >/dev/null || exit 1
fi
binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" || exit 1
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" || exit 1
fi
echo "qemu-user runs linux-arm64 programs here ($(qemu-aarch64 --version | head -n 1))"
