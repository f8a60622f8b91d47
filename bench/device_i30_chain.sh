#!/bin/bash
# Issue 30's GPU measurements as one detached chain on the lent machine (bench/results/).
#   setsid nohup bash bench/device_i30_chain.sh RESULTS_DIR [STEPS] > RESULTS_DIR/chain.log 2>&1 &
# STEPS: the steps to run, space-separated (default: all, in the order below; `next`:
# the ones that decide what caps a GPU node's rate and whether `timing_sleep: issue`
# steadies Triton's labels, ~15 min); PERTURB=N in the environment: N tasks per domain
# perturbed (default 32). A device call lasts 10 min at most and the machine goes back
# 30 s after one ends: start the chain detached in one call, then poll in calls made at
# once, each copying RESULTS_DIR under $OUT as one tar (issue #30's closing notes
# show the calls): a call brings back at most 8 files, and a RESULTS_DIR under $OUT
# with more loses the rest (kernels_i30_tritrials_h100.txt).
# Runs from a copy of the tree (a later call's re-sync cannot change it mid-run); each step
# writes its log and JSON into RESULTS_DIR and a STEP.done marker; ALL_DONE ends the chain.
# Needs bubblewrap's .deb files in .bw/ (FACTS.md: the H200 node has none installed); the
# profile and hostgil steps also py-spy's static binary as .bw/py-spy (`pip download
# py-spy --no-deps`, then unzip the wheel's py_spy-*.data/scripts/py-spy), skipped without.
set -u
RES=${1:?results dir}
STEPS=" ${2:-clockramp quiet pause drain alone prebuild colmean slowstate seedprobe tritonbuild cudabuild workers16 workers32 workers8 workers4 share mpsshare mpscontexts mpsnotiming16 mpsworkers16 mpsjobs16 notiming16 issue16 rule16 devshare contexts sleepprobe profile hostgil faultshare mpsfaultshare} "
[[ $STEPS == " next " ]] && STEPS=" workers16 notiming16 issue16 rule16 devshare contexts sleepprobe hostgil "
# `mps`: do the job processes take turns on the GPU (time-slicing between contexts), and
# does NVIDIA's MPS (one server context for all) lift a GPU node's rate? ~9 min
[[ $STEPS == " mps " ]] && STEPS=" share mpsshare mpscontexts mpsnotiming16 mpsworkers16 workers16 sleepprobe "
# `mpsjobs`: the job children themselves as MPS clients (CRUCIBLE_GPU_MPS_PIPE: every GPU
# runner on one uid, which one MPS server needs; the host stays off MPS), beside the same
# batch without, ~5 min; `next2`: that, and the time-sliced batch at 4 and 8 runners
# (past ~4 processes time-slicing adds no GPU throughput: i30_cap.txt), ~10 min
[[ $STEPS == " mpsjobs " ]] && STEPS=" workers16 mpsjobs16 "
[[ $STEPS == " next2 " ]] && STEPS=" workers16 mpsjobs16 workers8 workers4 "
# `mpsfault`: does one process's illegal address reach its neighbours, time-sliced and
# under MPS (probe_gpu_share --fault), and the jobs on MPS again (one uid, its process
# limit the runners' sum) beside the time-sliced batch, ~5 min
[[ $STEPS == " mpsfault " ]] && STEPS=" workers16 faultshare mpsfaultshare mpsjobs16 "
# `mpsalone`: both domains' perturbation batch at once in one process beside each alone
# (bench_kernels --mixed: torch's RNG is the process's, verifier 9), then the jobs on MPS
# with a failure a neighbour could have caused verified again alone (KernelVerifier.verify)
# beside the time-sliced batch, ~8 min
[[ $STEPS == " mpsalone " ]] && STEPS=" mixed workers16 mpsjobs16 "
# `catalog`: the issue's headline targets on one node, the whole catalog with its builds made
# first as a build node makes them (and each reference again, warm), then the same batch
# building on the GPU node itself as one machine does, ~15 min
[[ $STEPS == " catalog " ]] && STEPS=" prebuild pause "
# `v12`: verifier 12's clock on a fresh card (clockramp, first: no process has opened the
# card), then the whole catalog built first (how often the clock was spun, none
# gpu_clock_low, labels as at v11: compare_kernel_runs.py against kernels_i30_catalog_v11b),
# ~9 min
[[ $STEPS == " v12 " ]] && STEPS=" clockramp prebuild "
# `kb`: KernelBench level 1 at its own sizes, Crucible (its builds first on this node's
# CPU runners, as a build node makes them) beside KernelBench's own precompile and eval in
# one process (bench/kernelbench_phase.py); needs a copy of KernelBench's src/ and
# KernelBench/level1 in .kb/ and the wheels it lacks in .whl/ (KB_NEEDS there), both
# carried; KB_PROBLEMS picks the problems (its eval takes 1.5-3 min a candidate at
# ReLU's 6.4 GB), KB_SKIP the candidates (name prefixes) only Crucible verifies. ~13 min
# for the default two
[[ $STEPS == " kb " ]] && STEPS=" kb "
# `jobrate`: the fresh-job skeleton without Crucible's gates (probe_job_rate.py): a context,
# a job, a job handing its tensors over, at 1 and 16 runners, at the driver's hardware
# queues per context and at one; then the hand-over with a spare child per runner made
# ahead, at 8, 1 and 2 queues, ~9 min (the first run, 5 s windows: i30_jobrate_h100.json)
[[ $STEPS == " jobrate " ]] && STEPS=" jobrate jobrate2 "
# `conn`: the whole catalog built first with one hardware queue per job's context
# (KernelSettings.gpu_connections 1, the default from verifier 14: prebuild), beside the
# same at the driver's 8 (conn8): the rate, and whether any label or speedup moves
# (compare_kernel_runs.py), ~15 min (kernels_i30_conn{8,1}_h100.*: 225 and 431 a minute)
[[ $STEPS == " conn " ]] && STEPS=" prebuild conn8 "
# `trials`: the whole catalog built first at this tree (one read back per trial's zone
# check, comparison and hand-over; the trials' and pauses' parts reported), beside the
# same at the tree in .bw/base.tar (`git archive BASE > .bw/base.tar`, carried): ~16 min
[[ $STEPS == " trials " ]] && STEPS=" prebuild base "
# `tritrials`: the same pair for the Triton half of the catalog alone (its builds made
# first; no warm references), for a lease too short for `trials`: ~6 min
[[ $STEPS == " tritrials " ]] && STEPS=" tritrials tribase "
mkdir -p "$RES" /tmp/bw
SRC=$(cd "$(dirname "$0")/.." && pwd)
rm -rf /root/i30tree && cp -a "$SRC" /root/i30tree && cd /root/i30tree || exit 1
for f in .bw/*.deb; do dpkg -x "$f" /tmp/bw; done
unset OUT  # results stay in RESULTS_DIR; each call collects them itself
export PATH=/tmp/bw/usr/bin:$PATH PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=/tmp/bw/usr/lib/x86_64-linux-gnu:/tmp/bw/lib/x86_64-linux-gnu
step() {  # step NAME LIMIT_S CMD...
    local name=$1 limit=$2; shift 2
    [[ $STEPS == *" $name "* ]] || return 0
    echo "== $(date +%T) $name: $*"
    local t0=$SECONDS
    timeout -k 10 "$limit" "$@" > "$RES/$name.log" 2>&1
    local rc=$?  # before the echo's $(date) sets $? again
    echo "== $(date +%T) $name rc=$rc in $((SECONDS - t0))s"
    touch "$RES/$name.done"
}
# at_base NAME LIMIT ARGS...: step NAME, bench_kernels.py ARGS at the tree in .bw/base.tar
# (extracted once a chain, into /root/base), its nvidia-smi samples beside
rm -rf /root/base
at_base() {
    local name=$1 limit=$2; shift 2
    [[ $STEPS == *" $name "* && -f .bw/base.tar ]] || return 0
    [[ -d /root/base ]] || { mkdir -p /root/base && tar -xf .bw/base.tar -C /root/base; }
    step "$name" "$limit" bash -c 'cd /root/base && exec "$@"' _ python3 \
        /root/i30tree/bench/gpu_sampler.py --out "$RES/${name}_smi" -- \
        python3 bench/bench_kernels.py "$@" --out "$RES/$name.json"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$RES/gpu.txt" 2>&1
python3 -c 'import torch, triton; print(torch.__version__, triton.__version__)' >> "$RES/gpu.txt" 2>&1
# the catalog batch (64 references, 32 tasks' perturbations per domain); the
# order puts what the issue's targets need first, so a chain cut short loses the least
FULL=(--perturb-tasks "${PERTURB:-32}" --ext-kernels 0 --compile-baseline-tasks 0 --workers 16)
# first, on a fresh machine (the card idle, no context open): a timing while the SM clock
# rises from idle, and after quiet.clock_up (verifier 12), ~2 min
step clockramp 240 python3 bench/probe_clock_ramp.py tasks/cuda/col_mean --cycles 2 \
    --idle-wait-s 20 --out "$RES/clockramp.json"
step quiet 120 python3 bench/probe_gpu_quiet.py --out "$RES/quiet.json"
step mixed 300 python3 bench/bench_kernels.py --tasks \
    relu,row_sum,col_mean,softmax_rows,layer_norm,matmul_fp32,rms_norm,gelu_tanh \
    --perturb-tasks 8 --ops tail_guard_dropped,tail_mask_dropped,wrong_stride,grid_off_by_one,\
rename_kernel,num_warps,uncoalesced,wrong_reduction_identity --workers 16 --ext-kernels 0 \
    --compile-baseline-tasks 0 --prebuild --mixed --out "$RES/mixed.json"
# `confirm`: the tasks whose renames of a passing reference came out slow on the H100 node
# (kernels_i30_catalog_pause: cuda row_max 0.60x; earlier batches the rest), their renames
# beside perturbations that are slow, each slow verdict measured again (confirm_slow), ~2 min
step confirm 240 python3 bench/bench_kernels.py --tasks \
    row_max,linear_gelu_fp16,row_sum_fp16,log_softmax_rows,cross_entropy_rows,col_mean \
    --perturb-tasks 6 --ops rename_kernel,num_warps,uncoalesced --workers 16 --ext-kernels 0 \
    --compile-baseline-tasks 0 --prebuild --out "$RES/confirm.json"
step pause 540 python3 bench/gpu_sampler.py --out "$RES/pause_smi" -- \
    python3 bench/bench_kernels.py "${FULL[@]}" --out "$RES/pause.json"
step drain 540 python3 bench/gpu_sampler.py --out "$RES/drain_smi" -- \
    python3 bench/bench_kernels.py "${FULL[@]}" --drain --out "$RES/drain.json"
step alone 300 python3 bench/bench_timing_alone.py --workers 8 --out "$RES/alone.json"
step prebuild 540 python3 bench/gpu_sampler.py --out "$RES/prebuild_smi" -- \
    python3 bench/bench_kernels.py "${FULL[@]}" --prebuild --warm-refs --out "$RES/prebuild.json"
step conn8 540 python3 bench/gpu_sampler.py --out "$RES/conn8_smi" -- python3 \
    bench/bench_kernels.py "${FULL[@]}" --prebuild --warm-refs --gpu-connections driver \
    --out "$RES/conn8.json"
at_base base 540 "${FULL[@]}" --prebuild --warm-refs
TRI=(--domains triton --perturb-tasks "${PERTURB:-32}" --ext-kernels 0 --compile-baseline-tasks 0
     --workers 16 --prebuild)
step tritrials 300 python3 bench/gpu_sampler.py --out "$RES/tritrials_smi" -- \
    python3 bench/bench_kernels.py "${TRI[@]}" --out "$RES/tritrials.json"
at_base tribase 300 "${TRI[@]}"
step colmean 90 python3 bench/probe_task_timing.py tasks/triton/col_mean
# the states a batch puts the card in, each with fresh processes timing col_mean's
# references (cuda col_mean's rename once timed 1.52x twice in a row), ~3 min
step slowstate 300 python3 bench/probe_slow_state.py tasks/cuda/col_mean \
    tasks/triton/col_mean --runs 3 --out "$RES/slowstate.json"
# does a build node's precompile spare the GPU node Triton's compile (the JIT's keys)?
step seedprobe 300 python3 bench/probe_triton_seed.py --n 8 --out "$RES/seedprobe.json"
# each build tier alone on this node's cores, warm runners (its CPU seconds); the CUDA
# one with the batch's load_inline fixture, as the batch has it
step tritonbuild 300 python3 bench/bench_kernels.py --build-only --domains triton \
    --perturb-tasks "${PERTURB:-32}" --workers 16 --out "$RES/tritonbuild.json"
step cudabuild 300 python3 bench/bench_kernels.py --build-only --domains cuda --with-extension \
    --perturb-tasks "${PERTURB:-32}" --workers 16 --out "$RES/cudabuild.json"
# a prebuilt Triton batch at 4 to 32 runners: is the GPU node's rate its cores'?
W_TASKS=${W_TASKS:-attention_scores_softmax,bias_tanh_scale,col_mean,cross_entropy_rows,ffn_residual_layernorm,gelu_tanh,layer_norm,linear_gelu_fp16,log_softmax_rows,matmul_fp32,relu,rms_norm,row_max,row_sum_fp16,single_head_attention,swiglu}
# that batch's bench_kernels arguments, less --workers and --out
TB=(python3 bench/bench_kernels.py --domains triton --tasks "$W_TASKS" --perturb-tasks 16
    --ext-kernels 0 --compile-baseline-tasks 0 --prebuild)
for w in 16 32 8 4; do
    step "workers$w" 300 "${TB[@]}" --workers "$w" --out "$RES/workers$w.json"
done
step jobrate 400 python3 bench/probe_job_rate.py --workers 1,16 --seconds 12 \
    --env CUDA_DEVICE_MAX_CONNECTIONS=1 --out "$RES/jobrate.json"
step jobrate2 300 python3 bench/probe_job_rate.py --modes share --workers 16 --seconds 12 \
    --prefork --env CUDA_DEVICE_MAX_CONNECTIONS=1 --env CUDA_DEVICE_MAX_CONNECTIONS=2 \
    --out "$RES/jobrate2.json"
# N processes each running a small forward's shape at once: do they take turns?
step share 120 python3 bench/probe_gpu_share.py
# the same with the first process faulting: how many neighbours fail with it
step faultshare 120 python3 bench/probe_gpu_share.py --sizes 16 --fault
# the same under MPS: the daemon started here, its server checked, stopped after
MPS_STEPS=0
for s in mpsshare mpscontexts mpsnotiming16 mpsworkers16 mpsfaultshare; do
    [[ $STEPS == *" $s "* ]] && MPS_STEPS=1
done
if ((MPS_STEPS)); then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p /tmp/mps-pipe /tmp/mps-log
    if nvidia-cuda-mps-control -d > "$RES/mps.log" 2>&1; then
        step mpsshare 120 python3 bench/probe_gpu_share.py
        echo get_server_list | nvidia-cuda-mps-control >> "$RES/mps.log" 2>&1
        step mpscontexts 120 python3 bench/probe_cuda_context.py
        step mpsnotiming16 300 "${TB[@]}" --workers 16 --no-timing \
            --out "$RES/mpsnotiming16.json"
        step mpsworkers16 300 "${TB[@]}" --workers 16 --out "$RES/mpsworkers16.json"
        echo get_server_list | nvidia-cuda-mps-control >> "$RES/mps.log" 2>&1
        # last on this server: a fault may leave it unusable
        step mpsfaultshare 120 python3 bench/probe_gpu_share.py --sizes 16 --fault
        echo quit | nvidia-cuda-mps-control >> "$RES/mps.log" 2>&1
        cp -r /tmp/mps-log "$RES/" 2>/dev/null
    else
        echo "== MPS: the control daemon did not start (mps.log)"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    sleep 3
fi
if [[ $STEPS == *" mpsjobs16 "* ]]; then
    mkdir -p /tmp/mps-jobs /tmp/mps-jobs-log && chmod 1777 /tmp/mps-jobs /tmp/mps-jobs-log
    if CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-jobs CUDA_MPS_LOG_DIRECTORY=/tmp/mps-jobs-log \
        nvidia-cuda-mps-control -d > "$RES/mpsjobs.log" 2>&1; then
        CRUCIBLE_GPU_MPS_PIPE=/tmp/mps-jobs step mpsjobs16 300 python3 bench/gpu_sampler.py \
            --out "$RES/mpsjobs16_smi" -- "${TB[@]}" --workers 16 --out "$RES/mpsjobs16.json"
        echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-jobs nvidia-cuda-mps-control \
            >> "$RES/mpsjobs.log" 2>&1
        echo quit | CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-jobs nvidia-cuda-mps-control \
            >> "$RES/mpsjobs.log" 2>&1
        cp -r /tmp/mps-jobs-log "$RES/" 2>/dev/null
        ls -la /tmp/mps-jobs >> "$RES/mpsjobs.log" 2>&1
    fi
fi
# the same batch without the timed runs (each holds the GPU alone and stops the others):
# their share of the rate
step notiming16 300 "${TB[@]}" --workers 16 --no-timing --out "$RES/notiming16.json"
# GPU memory handed over by fd (every trial's tensors): does the driver serialize it?
step devshare 300 python3 bench/probe_devshare.py
# fresh CUDA contexts, 1 to 16 at once (each job child makes one)
step contexts 120 python3 bench/probe_cuda_context.py
# the same batch under each KernelSettings.timing_sleep (issue, the default since verifier
# version 8, is workers16's too): do the Triton references' times and labels hold still?
for how in issue rule; do
    step "${how}16" 300 "${TB[@]}" --workers 16 --timing-sleep "$how" --out "$RES/${how}16.json"
done
# the timed runs' queued sleep against the host's launch work, quiet and beside CPU hogs
step sleepprobe 300 python3 bench/probe_timing_sleep.py --out "$RES/sleepprobe.json"
# where a GPU node's CPU goes in a prebuilt Triton batch: py-spy (a static binary put in
# .bw/ by hand, never committed) samples the bench and every runner, collapsed stacks
PROFILE_TASKS=${PROFILE_TASKS:-attention_scores_softmax,col_mean,gated_mlp,layer_norm,linear_relu,relu,row_max,swiglu}
[[ -x .bw/py-spy ]] && step profile 400 .bw/py-spy record --subprocesses --nonblocking \
    --rate 50 --format raw -o "$RES/profile.txt" -- python3 bench/bench_kernels.py \
    --domains triton --tasks "$PROFILE_TASKS" --perturb-tasks 8 --ext-kernels 0 \
    --compile-baseline-tasks 0 --workers 16 --prebuild --out "$RES/profile_run.json"
# the verifying process alone, only threads holding its interpreter lock: samples over
# rate x seconds is how much of the batch that one lock was held (near 1: the host is serial)
[[ -x .bw/py-spy ]] && step hostgil 300 .bw/py-spy record --gil --nonblocking --rate 50 \
    --format raw -o "$RES/hostgil.txt" -- "${TB[@]}" --workers 16 --out "$RES/hostgil_run.json"
if [[ $STEPS == *" kb "* ]]; then
    # the wheels unpacked (no pip in the image's venv), only those the image lacks
    python3 - > "$RES/kbdeps.log" 2>&1 <<'PY'
import glob, importlib.util, zipfile
mods = {"pydantic": "pydantic", "pydantic_core": "pydantic_core",
        "annotated_types": "annotated_types", "typing_inspection": "typing_inspection",
        "tqdm": "tqdm", "python_dotenv": "dotenv", "requests": "requests", "urllib3": "urllib3",
        "idna": "idna", "certifi": "certifi", "charset_normalizer": "charset_normalizer"}
for whl in sorted(glob.glob(".whl/*.whl")):
    dist = whl.split("/")[-1].split("-")[0]
    mod = mods.get(dist)
    if mod and importlib.util.find_spec(mod) is None:
        zipfile.ZipFile(whl).extractall("/tmp/kbdeps")
        print("unpacked", whl)
    else:
        print("kept the image's", dist)
PY
    KB_PROBLEMS=${KB_PROBLEMS:-19_ReLU,1_Square_matrix_multiplication_}
    PYTHONPATH=/tmp/kbdeps step kb 1500 python3 bench/gpu_sampler.py --out "$RES/kb_smi" -- \
        python3 bench/bench_kernels.py --only-kernelbench --kernelbench .kb \
        --kb-problems "$KB_PROBLEMS" --kb-eval-skip "${KB_SKIP:-}" --prebuild \
        --out "$RES/kb.json"
fi
touch "$RES/ALL_DONE"
