#!/usr/bin/env bash
# The paper path's GPU checks on one CUDA GPU, run in the GPU env (environment.yml):
#   1. vLLM's generated tokens/s on Qwen3-8B's shape with random weights
#      (benchmarks/bench_vllm_throughput.py): the figure behind eval.shard.tokens_per_s;
#   2. the verl smoke chain with verl's own vLLM rollout on CUDA
#      (python -m pacs.verl_plugin.launch.smoke --rollout vllm --device cuda): build, train 2 steps,
#      stop, resume, merge, vLLM evaluation of the merged model, grade, pass@k.
# Without flash-attn in the env the actor and reference use sdpa and no padding removal (verl's
# defaults need flash-attn; the paper runs have it).
#   benchmarks/gpu_check.sh [OUT_DIR]          (default results/gpu_check)
set -uo pipefail
out=${1:-results/gpu_check}
mkdir -p "$out"
status=0

echo "== vLLM tokens/s, Qwen3-8B shape, random weights" >&2
python benchmarks/bench_vllm_throughput.py --shape qwen3-8b --out "$out/vllm_tps_qwen3-8b.json" \
  >"$out/bench_vllm.log" 2>&1 || status=1
tail -n 30 "$out/bench_vllm.log"

no_flash_attn=()
python -c "import flash_attn" 2>/dev/null || no_flash_attn=(
  "++actor_rollout_ref.model.override_config.attn_implementation=sdpa"
  "actor_rollout_ref.model.use_remove_padding=false"
)
echo "== verl smoke, vLLM rollout, CUDA" >&2
python -m pacs.verl_plugin.launch.smoke --config configs/verl_smoke.yaml --out "$out/verl_smoke" \
  --rollout vllm --device cuda -- "${no_flash_attn[@]}" >"$out/verl_smoke.log" 2>&1 || status=1
tail -n 40 "$out/verl_smoke.log"
exit $status
