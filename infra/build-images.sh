#!/usr/bin/env bash
# Builds Crucible's node images (infra/images/<image>/Dockerfile), tagged
# crucible-<image>:<version>, with podman (or docker when that is what is installed).
# Usage: infra/build-images.sh [image...]   (default: every image: eda cad emulator cpu head)
#
# No registry needed: when debian:bookworm-slim is absent, the base is made from Debian
# packages with mmdebstrap and imported under that name, so the Dockerfiles stay as they
# are (a user with a registry builds them unchanged). Each image is then labelled with its
# tool versions (org.crucible.toolchain.<tool>=<version>), read from the file its build
# wrote (/etc/crucible/toolchain.json, the probe verdicts record): LABEL cannot hold a
# value computed during the build, so a second, label-only build does. Content-keyed: each
# image is labelled with the sha256 of everything its build reads (org.crucible.inputs:
# its Dockerfile, the build context less .dockerignore, the base image's id; see
# infra/images/inputs.py), and an image whose label is the tree's key is not built again
# (no engine build at all); otherwise the layers are cached as usual.
# The `npu` image (ascendc) is built only when named, FROM a CANN image the user supplies
# (CANN is Huawei's, not ours to ship): CANN_BASE_IMAGE=<image> infra/build-images.sh npu.
# Env: CRUCIBLE_ENGINE=podman|docker, CRUCIBLE_BASE_TAR=rootfs.tar (reuse a made base),
# CANN_BASE_IMAGE (npu only).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
all=(eda cad emulator cpu head)
images=("${@:-${all[@]}}")
for i in "${images[@]}"; do
  if [ ! -f "infra/images/$i/Dockerfile" ]; then
    echo "no image '$i': want one of ${all[*]} npu (infra/images/<image>/Dockerfile)" >&2
    exit 2
  fi
  if [ "$i" = npu ] && [ -z "${CANN_BASE_IMAGE:-}" ]; then
    echo "the npu image needs a CANN base image: CANN_BASE_IMAGE=<image with CANN's toolkit, e.g. a cann image from Huawei's AscendHub, https://www.hiascend.com/developer/ascendhub> infra/build-images.sh npu" >&2
    exit 2
  fi
done

engine=${CRUCIBLE_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null; then engine=podman
  elif command -v docker >/dev/null; then engine=docker
  else
    echo "neither podman nor docker is installed: run infra/install-toolchains.sh containers" >&2
    exit 1
  fi
fi
run=("$engine")
# crun fails in a cgroups-v1/hybrid VM; runc works (FACTS.md): prefer it when present
if [ "$engine" = podman ] && [ -x /usr/sbin/runc ]; then run+=(--runtime /usr/sbin/runc); fi

# The build fetches Debian packages and wheels (apt mirrors and PyPI): behind a proxy that
# re-signs TLS, the RUN steps need the host's trust store. Podman mounts it for the build
# only (no layer keeps it); CRUCIBLE_HOST_CA=0 turns that off.
build_opts=()
if [ "$engine" = podman ] && [ "${CRUCIBLE_HOST_CA:-1}" != 0 ] \
  && [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  build_opts+=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
base=debian:bookworm-slim
say() { echo "build-images: $*" >&2; }

make_base() {
  if "${run[@]}" image exists "$base" 2>/dev/null \
    || "${run[@]}" image inspect "$base" >/dev/null 2>&1; then
    return
  fi
  local tar=${CRUCIBLE_BASE_TAR:-}
  local tmp=
  if [ -z "$tar" ] || [ ! -s "$tar" ]; then
    if ! command -v mmdebstrap >/dev/null; then
      say "$base is absent and mmdebstrap is not installed: run infra/install-toolchains.sh containers (or pull $base)"
      exit 1
    fi
    tmp=$(mktemp -d)
    tar=${CRUCIBLE_BASE_TAR:-$tmp/rootfs.tar}
    say "making $base from Debian packages (mmdebstrap, ~2 min)"
    mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$tar"
  fi
  # the full name docker.io/library/...: what FROM debian:bookworm-slim resolves to
  "${run[@]}" import --change 'CMD ["bash"]' "$tar" "docker.io/library/$base" >/dev/null
  [ -n "$tmp" ] && rm -rf "$tmp"
  say "imported $base"
}

image_id() { "${run[@]}" image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }
label_of() {
  "${run[@]}" image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

build_one() {
  local image=$1 tag="crucible-$1:$version" plain="crucible-$1:$version-unlabelled"
  local start=$SECONDS inputs from=$base args=()
  if [ "$image" = npu ]; then
    from=$CANN_BASE_IMAGE
    args=(--build-arg "CANN_BASE_IMAGE=$CANN_BASE_IMAGE")
    if [ -z "$(image_id "$from")" ]; then "${run[@]}" pull "$from" >/dev/null; fi
  fi
  inputs=$(python3 infra/images/inputs.py "infra/images/$image/Dockerfile" \
    --base-id "$(image_id "$from")" --root "$root")
  if [ -n "$(image_id "$tag")" ] && [ "$(label_of "$tag" org.crucible.inputs)" = "$inputs" ]; then
    say "$tag is up to date: its inputs are unchanged (${inputs:0:12})"
    return
  fi
  say "building $tag (infra/images/$image/Dockerfile, inputs ${inputs:0:12})"
  "${run[@]}" build "${build_opts[@]}" "${args[@]}" --quiet -f "infra/images/$image/Dockerfile" \
    -t "$plain" . >/dev/null
  local id
  id=$(image_id "$plain")
  if [ -n "$(image_id "$tag")" ] && [ "$(label_of "$tag" org.crucible.built-from)" = "$id" ] \
    && [ "$(label_of "$tag" org.crucible.inputs)" = "$inputs" ]; then
    say "$tag is up to date ($((SECONDS - start)) s)"
    return
  fi
  # the tool versions the build recorded, as labels
  local ctr tmp labels=()
  tmp=$(mktemp -d)
  ctr=$("${run[@]}" create "$plain" true)
  "${run[@]}" cp "$ctr:/etc/crucible/toolchain.json" "$tmp/toolchain.json" >/dev/null
  "${run[@]}" rm "$ctr" >/dev/null
  while IFS= read -r line; do labels+=(--label "$line"); done < <(
    python3 - "$tmp/toolchain.json" <<'PY'
import json, re, sys
info = json.load(open(sys.argv[1]))
for tool, ver in sorted(info["tools"].items()):
    print(f"org.crucible.toolchain.{re.sub(r'[^a-z0-9.-]', '-', tool.lower())}={ver}")
PY
  )
  printf 'FROM %s\n' "$plain" >"$tmp/Dockerfile"
  "${run[@]}" build --quiet -f "$tmp/Dockerfile" -t "$tag" \
    --label "org.crucible.built-from=$id" --label "org.crucible.version=$version" \
    --label "org.crucible.inputs=$inputs" \
    "${labels[@]}" "$tmp" >/dev/null
  rm -rf "$tmp"
  say "built $tag ($((SECONDS - start)) s)"
  for ((k = 1; k < ${#labels[@]}; k += 2)); do say "  ${labels[k]}"; done
}

for i in "${images[@]}"; do
  if [ "$i" != npu ]; then make_base; break; fi  # the npu image starts FROM CANN's
done
for i in "${images[@]}"; do build_one "$i"; done
