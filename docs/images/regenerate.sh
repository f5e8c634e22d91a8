#!/usr/bin/env bash
# Rebuilds the inspector screenshots of docs/inspector.md (docs/images/*.png) with
# `fragscope view --screenshot` under xvfb-run, so that they follow the inspector instead of being
# redone by hand. Inputs: the samples in traces/samples/, traces this script makes (fragscope synth,
# fragscope-train) and the third-party evidence in ../shared/data (never copied into the project;
# an image whose input is absent is skipped with a message and the old image kept).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: docs/images/regenerate.sh [--data DIR] [--out DIR] [--only NAME]... [BUILD_DIR]

Rebuilds docs/images/inspector-*.png from the project's samples, traces it makes itself and the
third-party evidence, with `fragscope view --screenshot` under `xvfb-run -a`.

  BUILD_DIR     the build whose inspector/fragscope and trainer/fragscope-train are used
                (default: build/release under the project root)
  --data DIR    the third-party evidence (default: ../shared/data beside the project root);
                images whose input is absent there are skipped with a message
  --out DIR     where the PNGs go (default: docs/images)
  --only NAME   only this image (e.g. --only compare or --only inspector-compare); repeatable
  -h, --help    this text

Needs xvfb-run (package xvfb) and a build with the inspector (`fragscope view`). Exit status 0
when every image that has its input was written, 1 when one failed, 2 on bad usage.
EOF
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="$root/build/release"
data=""
out="$root/docs/images"
only=()
value() {  # an option's value, or bad usage
  if (($# < 2)) || [[ -z $2 ]]; then
    echo "regenerate.sh: $1 needs a value (see --help)" >&2
    exit 2
  fi
  printf '%s' "$2"
}
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --data) data=$(value "$@"); shift 2 ;;
    --out) out=$(value "$@"); shift 2 ;;
    --only) only+=("$(value "$@")"); shift 2 ;;
    -*) echo "regenerate.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done

fragscope="$build/inspector/fragscope"
trainer="$build/trainer/fragscope-train"
for tool in "$fragscope" "$trainer"; do
  if [[ ! -x $tool ]]; then
    echo "regenerate.sh: $tool not found: build first (cmake --build --preset release) or name the build folder" >&2
    exit 2
  fi
done
fragscope=$(cd "$(dirname "$fragscope")" && pwd)/fragscope
trainer=$(cd "$(dirname "$trainer")" && pwd)/fragscope-train
if ! "$fragscope" view --help >/dev/null 2>&1; then
  echo "regenerate.sh: $fragscope has no 'view' (built without libimgui-dev, libglfw3-dev, libstb-dev: ./build.sh deps)" >&2
  exit 2
fi
if ! command -v xvfb-run >/dev/null; then
  echo "regenerate.sh: xvfb-run not found (apt-get install xvfb xauth)" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The evidence as the top bar shows it: ../shared/data/... (relative to the project root, where the
# shots of it are taken), as the docs name it; a folder given is taken from the current one.
if [[ -z $data ]]; then
  data=../shared/data
elif [[ $data != /* ]]; then
  data="$PWD/$data"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fragscope-shots.XXXXXX")
trap 'rm -rf "$work"' EXIT

images=(overview timeline map table events bins oom compare active-memory state state-cut multidevice 10m)
for name in ${only[@]+"${only[@]}"}; do
  name=${name%.png}
  if [[ " ${images[*]} " != *" ${name#inspector-} "* ]]; then
    echo "regenerate.sh: no image $name (one of: ${images[*]})" >&2
    exit 2
  fi
done

wanted() {
  ((${#only[@]} == 0)) && return 0
  local name
  for name in "${only[@]}"; do
    name=${name%.png}
    [[ ${name#inspector-} == "$1" ]] && return 0
  done
  return 1
}

failed=0
# shot NAME DIR TRACE [view options...]: docs/images/inspector-NAME.png of TRACE, run from DIR so
# that the top bar names the trace as the docs do (traces/samples/..., md.fst).
shot() {
  local name=$1 dir=$2 trace=$3
  shift 3
  wanted "$name" || return 0
  local path=$trace
  [[ $trace == /* ]] || path="$dir/$trace"
  if [[ ! -e $path ]]; then
    echo "skip inspector-$name.png: $path is absent"
    return 0
  fi
  local png="$out/inspector-$name.png"
  # A screen larger than any shot: the window is never cut to the default 1280x1024.
  if (cd "$dir" && xvfb-run -a -s "-screen 0 1920x1200x24" "$fragscope" view "$trace" --screenshot "$png" "$@" \
        >"$work/$name.log" 2>&1); then
    echo "wrote inspector-$name.png ($trace${*:+ $*})"
  else
    echo "FAILED inspector-$name.png ($trace $*):" >&2
    sed 's/^/  /' "$work/$name.log" >&2
    failed=1
  fi
}


samples=traces/samples
# The sample OOM run: the whole window and each panel at its first OOM (event 444).
shot overview "$root" $samples/synth-oom.fst --size 1600x1000
shot timeline "$root" $samples/synth-oom.fst --panel timeline --size 1600x420
shot map "$root" $samples/synth-oom.fst --panel map --size 1280x480
shot table "$root" $samples/synth-oom.fst --panel table --size 1280x480
shot events "$root" $samples/synth-oom.fst --panel events --size 1280x480
shot bins "$root" $samples/synth-oom.fst --panel bins --size 1280x480
shot oom "$root" $samples/synth-oom.fst --panel oom --size 1280x480
shot compare "$root" $samples/synth-oom.fst --panel compare --size 1600x900 \
  --alloc-conf growth=on --alloc-conf expandable=on

# Real evidence: a PyTorch forward pass stacked (active memory), a PyTorch state taken at an OOM,
# and a TensorFlow dump whose chunk list is cut (its unlisted ranges grey: not known to be free).
shot active-memory "$root" "$data"/torch/pt_cs336_lm_ctx128_forward.pickle --panel timeline --stacked \
  --size 1600x420
shot state "$root" "$data"/torch/pt_flexgen_opt_oom_state.pickle --size 1600x1000
shot state-cut "$root" "$data"/tf/12_tensorflow-tensorflow_issue47820_fragment.log --size 1600x1000

# Traces made here. The reference trainer over two virtual devices, the batch growing at its
# fourth step: device 1 (200 MiB) runs out (exit 1 is that OOM, the trace is written).
if wanted multidevice; then
  status=0
  (cd "$work" && "$trainer" --backend sim --model resnet18 --batch-schedule 32,32,32,128 --steps 4 \
    --alloc-conf virtual_devices=1GiB+200MiB --trace md.fst >train.log 2>&1) || status=$?
  if ((status == 1)) && [[ -s $work/md.fst ]]; then
    shot multidevice "$work" md.fst --size 1600x1000
  else
    echo "FAILED inspector-multidevice.png: fragscope-train exited $status, not 1 (the OOM on device 1):" >&2
    sed 's/^/  /' "$work/train.log" >&2
    failed=1
  fi
fi
# Ten million events zoomed out: the envelope.
if wanted 10m; then
  if "$fragscope" synth --events 10000000 --seed 7 --out "$work/s10m.fst" >"$work/synth.log" 2>&1; then
    shot 10m "$work" s10m.fst --panel timeline --size 1600x420
  else
    echo "FAILED inspector-10m.png: fragscope synth:" >&2
    sed 's/^/  /' "$work/synth.log" >&2
    failed=1
  fi
fi
exit $failed
