#!/bin/sh
# Installs the pi-workflows executable for this machine:
#
#   curl -fsSL <base url>/install.sh | sh
#
# It downloads SHA256SUMS and the archive for this platform from the base URL, refuses the
# archive unless its SHA-256 matches, and puts `pi-workflows` into $PREFIX/bin (default
# ~/.local/bin). No sudo; it writes nothing outside that folder and a temporary one it removes.
#
#   PI_WORKFLOWS_BASE_URL  where the release files are (default: the latest GitHub release)
#   PI_WORKFLOWS_VERSION   a release to install instead of the latest (e.g. 0.13.0)
#   PREFIX                 install into $PREFIX/bin (default: $HOME/.local)
set -eu

say() { printf '%s\n' "$*"; }
fail() {
  printf 'pi-workflows install: %s\n' "$*" >&2
  exit 1
}

repo_url="https://github.com/osolmaz/pi-workflows/releases"
if [ -n "${PI_WORKFLOWS_BASE_URL:-}" ]; then
  base_url="${PI_WORKFLOWS_BASE_URL%/}"
elif [ -n "${PI_WORKFLOWS_VERSION:-}" ]; then
  base_url="$repo_url/download/v${PI_WORKFLOWS_VERSION#v}"
else
  base_url="$repo_url/latest/download"
fi

# The platforms releases carry (release archives are named pi-workflows-<version>-<platform>).
platforms="linux-x64, linux-arm64, darwin-arm64, darwin-x64"
npm_hint="the npm package runs on Node >= 22.19 anywhere: npm install -g @osolmaz/pi-workflows"
system="$(uname -s)"
machine="$(uname -m)"
case "$system" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) os="" ;;
esac
case "$machine" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch="" ;;
esac
[ -n "$os" ] && [ -n "$arch" ] ||
  fail "no pi-workflows build for $system $machine; builds exist for $platforms; $npm_hint"
# A shell under Rosetta on Apple silicon says x86_64: take the native build.
if [ "$os-$arch" = darwin-x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
  arch=arm64
fi
platform="$os-$arch"

if [ -n "${PREFIX:-}" ]; then
  prefix="$PREFIX"
elif [ -n "${HOME:-}" ]; then
  prefix="$HOME/.local"
else
  fail "neither PREFIX nor HOME is set: say where to install, e.g. PREFIX=\$HOME/.local"
fi
bin_dir="$prefix/bin"

if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1"; }
else
  fail "needs curl or wget to download"
fi
if command -v sha256sum >/dev/null 2>&1; then
  digest() { sha256sum "$1" | cut -d ' ' -f 1; }
elif command -v shasum >/dev/null 2>&1; then
  digest() { shasum -a 256 "$1" | cut -d ' ' -f 1; }
else
  fail "needs sha256sum or shasum to check the download"
fi

tmp="$(mktemp -d 2>/dev/null || mktemp -d -t pi-workflows)"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

fetch "$base_url/SHA256SUMS" "$tmp/SHA256SUMS" || fail "could not download $base_url/SHA256SUMS"
# The one line `<sha256>  pi-workflows-<version>-<platform>.tar.xz`.
line="$(grep -E "^[0-9a-f]{64}  pi-workflows-[^ /]+-$platform\\.tar\\.xz\$" "$tmp/SHA256SUMS" | head -n 1 || true)"
if [ -z "$line" ]; then
  carried="$(sed -n 's/^[0-9a-f]\{64\}  pi-workflows-.*-\([a-z0-9]*-[a-z0-9]*\)\.tar\.xz$/\1/p' "$tmp/SHA256SUMS" | tr '\n' ' ')"
  carried="${carried% }"
  fail "the release at $base_url has no build for $platform (it has: ${carried:-none}); $npm_hint"
fi
expected="${line%% *}"
archive="${line##* }"

fetch "$base_url/$archive" "$tmp/$archive" || fail "could not download $base_url/$archive"
actual="$(digest "$tmp/$archive")"
[ "$actual" = "$expected" ] ||
  fail "checksum mismatch for $archive (expected $expected, got $actual): the download is damaged or was altered; nothing was installed"

mkdir "$tmp/unpacked"
if command -v xz >/dev/null 2>&1; then
  xz -dc "$tmp/$archive" | (cd "$tmp/unpacked" && tar -xf -) || fail "could not unpack $archive"
else
  # macOS has no xz command, but its tar (libarchive) reads .tar.xz itself.
  tar -xf "$tmp/$archive" -C "$tmp/unpacked" 2>/dev/null ||
    fail "could not unpack $archive: needs xz (e.g. apt install xz-utils) or a tar that reads .tar.xz"
fi
program="$tmp/unpacked/${archive%.tar.xz}/pi-workflows"
[ -f "$program" ] || fail "$archive holds no pi-workflows executable"

# Run it before it replaces anything: a build this machine cannot run is not installed.
version="$("$program" --version 2>/dev/null)" ||
  fail "$archive does not run on this machine ($system $machine); nothing was installed; $npm_hint"

mkdir -p "$bin_dir" || fail "could not create $bin_dir"
# Copy beside the target, then rename: a running pi-workflows keeps its old file.
cp "$program" "$bin_dir/.pi-workflows.new.$$" || fail "could not write into $bin_dir"
chmod 755 "$bin_dir/.pi-workflows.new.$$"
mv -f "$bin_dir/.pi-workflows.new.$$" "$bin_dir/pi-workflows" || fail "could not write $bin_dir/pi-workflows"

say "Installed pi-workflows $version"
say "  to $bin_dir/pi-workflows"
case ":${PATH:-}:" in
  *":$bin_dir:"*) say "Run: pi-workflows --help" ;;
  *)
    say "$bin_dir is not on your PATH. Add it, e.g. in ~/.profile:"
    say "  export PATH=\"$bin_dir:\$PATH\""
    ;;
esac
