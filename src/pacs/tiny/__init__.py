"""The tiny engine: a CPU-sized Qwen3 model, its SFT warm-up and one readable RL loop.

- :mod:`pacs.tiny.train`: the RL step and loop (PACS / GRPO / PPO on the synthetic task, calling
  :mod:`pacs.core_algos`): start here;
- :mod:`pacs.tiny.collect`: a step's groups: generation and grading (DAPO: several rounds,
filtered);
- :mod:`pacs.tiny.state`: a run's settings, its training state and the prompt sampler;
- :mod:`pacs.tiny.checkpoint`: checkpoints and bit-identical resume of a run folder;
- :mod:`pacs.tiny.common`: tokenisation, sampling, log-probs and in-loop pass@1 shared by SFT and
RL;
- :mod:`pacs.tiny.build`: local byte-level BPE tokenizer + tiny ``Qwen3ForCausalLM`` (no download);
- :mod:`pacs.tiny.sft`: supervised warm-up that makes the tiny "base model";
- :mod:`pacs.tiny.smoke`: the smoke profile's model and data, built in one process.
"""
